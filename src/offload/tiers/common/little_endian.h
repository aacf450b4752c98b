// Little-endian fields of the tiers' stored and wire formats (the chunk
// header, peer-to-peer messages): put_* write a value at `out`, get_* read
// one at `in`. The caller has checked that the bytes are there.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "kv/block_hash.h"

namespace strata::offload {

inline void put_u16(uint8_t* out, uint16_t v) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(uint8_t* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(uint8_t* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t get_u16(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] | (static_cast<uint16_t>(in[1]) << 8));
}
inline uint32_t get_u32(const uint8_t* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in[i]) << (8 * i);
  return v;
}
inline uint64_t get_u64(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

// A 128-bit hash (chunk key, namespace id): 16 bytes, low half first.
inline void put_hash(uint8_t* out, const kv::BlockHash& h) {
  put_u64(out, h.low);
  put_u64(out + 8, h.high);
}
inline kv::BlockHash get_hash(const uint8_t* in) { return {get_u64(in), get_u64(in + 8)}; }

}  // namespace strata::offload
