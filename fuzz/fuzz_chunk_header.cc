// Fuzz target: the tier chunk header (fs/obj/p2p tiers read it from files and
// sockets other processes wrote). Input layout: the first kHeaderBytes are the
// header, the rest the payload; a short input is the header alone.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "chunk_fixture.h"
#include "offload/tiers/common/chunk_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const strata::offload::ChunkFormat format = strata::fuzz::fuzz_chunk_format();
  const strata::offload::ChunkKey key = strata::fuzz::kFuzzChunkKey;
  const size_t header_bytes = std::min(size, static_cast<size_t>(strata::offload::kHeaderBytes));
  const std::span<const uint8_t> input(data, size);
  auto header = strata::offload::decode_chunk_header(format, key, input.first(header_bytes));
  if (header.ok()) {
    (void)strata::offload::verify_chunk_payload(header.value(), input.subspan(header_bytes));
  }
  return 0;
}
