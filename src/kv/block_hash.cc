#include "kv/block_hash.h"

#include <xxhash.h>

#include <cstring>

#include "base/check.h"

namespace strata::kv {
namespace {

void append_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void append_field(std::string& out, const std::string& field) {
  append_u32(out, static_cast<uint32_t>(field.size()));
  out += field;
}

BlockHash from_xxh(XXH128_hash_t h) { return {h.low64, h.high64}; }

}  // namespace

std::string BlockHash::to_hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(high >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

std::string ExtraKeys::serialize() const {
  std::string out;
  append_field(out, model_fingerprint);
  append_field(out, kv_dtype);
  append_field(out, cache_salt);
  return out;
}

BlockHash root_block_hash(const ExtraKeys& extra_keys) {
  std::string bytes = extra_keys.serialize();
  return from_xxh(XXH3_128bits_withSeed(bytes.data(), bytes.size(), kBlockHashSeed));
}

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> token_ids) {
  std::string bytes;
  bytes.reserve(16 + token_ids.size() * 4);
  append_u64(bytes, parent.low);
  append_u64(bytes, parent.high);
  for (int32_t t : token_ids) append_u32(bytes, static_cast<uint32_t>(t));
  return from_xxh(XXH3_128bits_withSeed(bytes.data(), bytes.size(), kBlockHashSeed));
}

void extend_block_hashes(const BlockHash& root, std::span<const int32_t> token_ids,
                         int64_t block_size, std::vector<BlockHash>& hashes) {
  STRATA_CHECK(block_size > 0);
  const int64_t num_full = static_cast<int64_t>(token_ids.size()) / block_size;
  for (int64_t i = static_cast<int64_t>(hashes.size()); i < num_full; ++i) {
    const BlockHash& parent = i == 0 ? root : hashes[i - 1];
    hashes.push_back(hash_block(parent, token_ids.subspan(i * block_size, block_size)));
  }
}

}  // namespace strata::kv
