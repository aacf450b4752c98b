// Fuzz target: the tier chunk header (fs/obj/p2p tiers read it from files and
// sockets other processes wrote). Input layout: the first kHeaderBytes are the
// header, the rest the payload; a short input is the header alone.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "offload/tiers/chunk_format.h"

namespace {

strata::offload::ChunkFormat fuzz_format() {
  strata::offload::ChunkFormat format;
  format.model_fingerprint = "fuzz-model";
  format.num_layers = 1;
  format.num_kv_heads = 1;
  format.head_dim = 2;
  format.block_size = 2;
  return format;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const strata::offload::ChunkFormat format = fuzz_format();
  const strata::offload::ChunkKey key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  const size_t header_bytes = std::min(size, static_cast<size_t>(strata::offload::kHeaderBytes));
  const std::span<const uint8_t> input(data, size);
  auto header = strata::offload::decode_chunk_header(format, key, input.first(header_bytes));
  if (header.ok()) {
    (void)strata::offload::verify_chunk_payload(header.value(), input.subspan(header_bytes));
  }
  return 0;
}
