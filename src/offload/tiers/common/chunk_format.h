// How one chunk of KV is laid out in host memory and framed in a secondary
// tier (file, object, peer message). Shared by every tier so that bytes
// written by one process, machine or tier type are read by any other.
//
// Canonical payload (format v2, the host tier's slot contents):
//   for layer in 0 .. num_layers-1:
//     K  num_tokens / W tiles of tensor::KvTileLayout{{kv_dtype, num_kv_heads,
//        head_dim}, W}, W = tensor::kv_tile_tokens(block_size)
//     V  the same tiles' V side
// where num_tokens = blocks_per_chunk * block_size, tiles in prompt order,
// little-endian: the KV pool's blocks byte for byte. A tile of W tokens is W
// rows' bytes grouped by kv head (K [head_dim][W], V [W][head_dim]; 4 bytes
// a value in f32, 2 in bf16/f16, 1 in fp8, then for fp8 one f32 scale per
// token and kv head). The payload depends only on the model, the dtype, the
// tile width and the chunk size, never on thread counts, batch settings or
// the KV pool's block ids; no tier widens or converts it. (v1 held plain
// token rows; its chunks are in another namespace and are never read.)
//
// Framed chunk (what a secondary tier stores) = ChunkHeader (kHeaderBytes,
// little-endian fields, below) followed by the payload.
//
//   off  size  field
//     0     8  magic "STRKVCH1"
//     8     4  format_version (2)
//    12     4  header_bytes (96)
//    16    16  namespace_id: XXH3-128 of ChunkFormat::namespace_string()
//    32    16  key: the chunk key (kv::BlockHash low, high)
//    48     8  payload_bytes
//    56     8  payload_checksum: XXH3-64 of the payload, seed 0
//    64     1  kv_dtype: tensor::KvCacheDtype code (0 f32, 1 bf16, 2 f16,
//                3 fp8_e4m3, 4 fp8_e5m2); also part of the namespace
//    65    23  reserved, zero
//    88     8  header_checksum: XXH3-64 of bytes [0, 88), seed 0
//
// Pure functions and plain data; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "kv/block_hash.h"
#include "tensor/kv_row_layout.h"

namespace strata::offload {

using ChunkKey = kv::BlockHash;

inline constexpr uint32_t kChunkFormatVersion = 2;
inline constexpr int64_t kHeaderBytes = 96;

// Everything that determines a chunk's bytes besides its key.
struct ChunkFormat {
  std::string model_fingerprint;  // engine::model_fingerprint()
  tensor::KvCacheDtype kv_dtype = tensor::KvCacheDtype::kF32;
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 0;        // tokens per KV-pool block
  int64_t blocks_per_chunk = 1;

  int64_t tokens_per_chunk() const { return block_size * blocks_per_chunk; }
  tensor::KvRowLayout row_layout() const { return {kv_dtype, num_kv_heads, head_dim}; }
  int64_t tile_tokens() const { return tensor::kv_tile_tokens(block_size); }
  // Payload size: num_layers * 2 * tokens * row_layout().row_bytes().
  int64_t payload_bytes() const;
  // "strata-kv-v2;model=<fp>;dtype=f32;layers=..;kv_heads=..;head_dim=..;tile=..;tokens=.."
  // Two formats share stored chunks exactly when these strings are equal.
  // In model and dtype, ';', '=', '%', spaces and non-ASCII bytes are written
  // as %XX so that no two formats give the same string.
  std::string namespace_string() const;
  // 32 hex digits of XXH3-128(namespace_string()): the directory / prefix
  // under which a tier keeps this format's chunks.
  std::string namespace_id_hex() const;
};

struct ChunkHeader {
  kv::BlockHash namespace_id;
  ChunkKey key;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// Header for `payload` stored under `key`; writes kHeaderBytes into `out`.
void encode_chunk_header(const ChunkFormat& format, const ChunkKey& key,
                         std::span<const uint8_t> payload, std::span<uint8_t, kHeaderBytes> out);

// Checks a header read back for `key`: magic, version, header checksum,
// kv dtype, namespace, key and payload size. The message says which field is wrong
// ("chunk header: key mismatch: file has ..., expected ..."). Does not check
// the payload; call verify_chunk_payload once it is read.
StatusOr<ChunkHeader> decode_chunk_header(const ChunkFormat& format, const ChunkKey& key,
                                          std::span<const uint8_t> header);
Status verify_chunk_payload(const ChunkHeader& header, std::span<const uint8_t> payload);

}  // namespace strata::offload
