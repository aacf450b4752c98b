// The chunk format and key every chunk-reading fuzz target uses
// (fuzz_chunk_header, fuzz_s3_response) and make_seeds.cc encodes its seeds
// with; one definition so the seeds stay valid inputs for all of them.
#pragma once

#include "offload/tiers/common/chunk_format.h"

namespace strata::fuzz {

inline offload::ChunkFormat fuzz_chunk_format() {
  offload::ChunkFormat format;
  format.model_fingerprint = "fuzz-model";
  format.num_layers = 1;
  format.num_kv_heads = 1;
  format.head_dim = 2;
  format.block_size = 2;
  return format;
}

inline constexpr offload::ChunkKey kFuzzChunkKey{0x0123456789abcdefULL, 0xfedcba9876543210ULL};

}  // namespace strata::fuzz
