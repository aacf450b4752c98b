#include "offload/tiers/common/chunk_format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <array>
#include <cstring>
#include <vector>

namespace strata::offload {
namespace {

ChunkFormat test_format() {
  ChunkFormat f;
  f.model_fingerprint = "qwen2.5-0.5b@abc123";
  f.num_layers = 2;
  f.num_kv_heads = 3;
  f.head_dim = 4;
  f.block_size = 5;
  f.blocks_per_chunk = 2;
  return f;
}

std::vector<uint8_t> test_payload(const ChunkFormat& f) {
  std::vector<uint8_t> p(static_cast<size_t>(f.payload_bytes()));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

constexpr ChunkKey kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};

uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the tests run on little-endian x86-64
  return v;
}
uint64_t u64_at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::array<uint8_t, kHeaderBytes> encode(const ChunkFormat& f, const ChunkKey& key,
                                         const std::vector<uint8_t>& payload) {
  std::array<uint8_t, kHeaderBytes> h;
  encode_chunk_header(f, key, payload, h);
  return h;
}

// Rewrites the header checksum so a test can change one field and reach the
// check behind the checksum.
void reseal(std::array<uint8_t, kHeaderBytes>& h) {
  const uint64_t sum = XXH3_64bits(h.data(), 88);
  std::memcpy(h.data() + 88, &sum, 8);
}

TEST(ChunkFormat, PayloadBytesAndNamespaceString) {
  const ChunkFormat f = test_format();
  EXPECT_EQ(f.tokens_per_chunk(), 10);
  EXPECT_EQ(f.payload_bytes(), 2 * 2 * 10 * 3 * 4 * 4);
  EXPECT_EQ(f.namespace_string(),
            "strata-kv-v2;model=qwen2.5-0.5b@abc123;dtype=f32;layers=2;kv_heads=3;head_dim=4;"
            "tile=5;tokens=10");
}

// Compact dtypes shrink the payload: 1/2 of f32 for bf16/f16, 1/4 plus one
// f32 scale per token, kv head, layer and K/V for fp8.
TEST(ChunkFormat, PayloadBytesFollowTheKvDtype) {
  ChunkFormat f = test_format();  // 2 layers, 10 tokens, 3 heads of 4
  const int64_t f32 = f.payload_bytes();
  f.kv_dtype = tensor::KvCacheDtype::kBF16;
  EXPECT_EQ(f.payload_bytes(), f32 / 2);
  f.kv_dtype = tensor::KvCacheDtype::kF16;
  EXPECT_EQ(f.payload_bytes(), f32 / 2);
  f.kv_dtype = tensor::KvCacheDtype::kFp8E4M3;
  EXPECT_EQ(f.payload_bytes(), f32 / 4 + 2 * 2 * 10 * 3 * 4);
  EXPECT_EQ(f.namespace_string(),
            "strata-kv-v2;model=qwen2.5-0.5b@abc123;dtype=fp8_e4m3;layers=2;kv_heads=3;"
            "head_dim=4;tile=5;tokens=10");
}

// The header names the dtype (offset 64; 0 = f32, so f32 headers are
// unchanged from before compact dtypes existed) and decode says which one
// a file holds.
TEST(ChunkFormat, HeaderCarriesTheKvDtype) {
  ChunkFormat bf16 = test_format();
  bf16.kv_dtype = tensor::KvCacheDtype::kBF16;
  const std::vector<uint8_t> payload = test_payload(bf16);
  std::array<uint8_t, kHeaderBytes> h = encode(bf16, kKey, payload);
  EXPECT_EQ(h[64], 1);
  ASSERT_TRUE(decode_chunk_header(bf16, kKey, h).ok());
  EXPECT_EQ(encode(test_format(), kKey, test_payload(test_format()))[64], 0);
  ChunkFormat fp8 = bf16;
  fp8.kv_dtype = tensor::KvCacheDtype::kFp8E4M3;
  StatusOr<ChunkHeader> wrong = decode_chunk_header(fp8, kKey, h);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "chunk header: kv_dtype mismatch: file has bf16, expected fp8_e4m3");
}

TEST(ChunkFormat, NamespaceIdDependsOnEveryByteChangingField) {
  const ChunkFormat base = test_format();
  const std::string id = base.namespace_id_hex();
  ASSERT_EQ(id.size(), 32u);
  for (char c : id) EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(c));
  EXPECT_EQ(test_format().namespace_id_hex(), id);

  std::vector<ChunkFormat> variants(6, base);
  variants[0].model_fingerprint = "other-model";
  variants[1].kv_dtype = tensor::KvCacheDtype::kBF16;
  variants[2].num_layers = 3;
  variants[3].num_kv_heads = 1;
  variants[4].head_dim = 8;
  variants[5].block_size = 6;
  for (const ChunkFormat& v : variants) EXPECT_NE(v.namespace_id_hex(), id) << v.namespace_string();

  // The payload depends on tokens per chunk and the tile width, not on how
  // the tokens split into blocks: blocks of 16 and 32 both hold 16-token
  // tiles, blocks of 5 and 10 tiles of 5 and 10.
  ChunkFormat sixteens = base, thirty_two = base;
  sixteens.block_size = 16;
  sixteens.blocks_per_chunk = 2;
  thirty_two.block_size = 32;
  thirty_two.blocks_per_chunk = 1;
  EXPECT_EQ(sixteens.namespace_id_hex(), thirty_two.namespace_id_hex());
  ChunkFormat tens = base;
  tens.block_size = 10;
  tens.blocks_per_chunk = 1;
  EXPECT_NE(tens.namespace_id_hex(), id);
}

TEST(ChunkFormat, NamespaceStringEscapesSeparatorsInFingerprint) {
  ChunkFormat a = test_format();
  a.model_fingerprint = "m;dtype=f32";
  EXPECT_EQ(a.namespace_string().find("model=m%3Bdtype%3Df32;"), 13u) << a.namespace_string();
  ChunkFormat b = test_format();
  b.model_fingerprint = "m";
  EXPECT_NE(a.namespace_id_hex(), b.namespace_id_hex());
}

TEST(ChunkFormat, EncodeWritesDocumentedLayout) {
  const ChunkFormat f = test_format();
  const std::vector<uint8_t> payload = test_payload(f);
  const auto h = encode(f, kKey, payload);

  EXPECT_EQ(std::memcmp(h.data(), "STRKVCH1", 8), 0);
  EXPECT_EQ(u32_at(h.data() + 8), 2u);
  EXPECT_EQ(u32_at(h.data() + 12), 96u);
  const std::string ns = f.namespace_string();
  const XXH128_hash_t ns_id = XXH3_128bits(ns.data(), ns.size());
  EXPECT_EQ(u64_at(h.data() + 16), ns_id.low64);
  EXPECT_EQ(u64_at(h.data() + 24), ns_id.high64);
  EXPECT_EQ((kv::BlockHash{ns_id.low64, ns_id.high64}.to_hex()), f.namespace_id_hex());
  EXPECT_EQ(u64_at(h.data() + 32), kKey.low);
  EXPECT_EQ(u64_at(h.data() + 40), kKey.high);
  EXPECT_EQ(u64_at(h.data() + 48), payload.size());
  EXPECT_EQ(u64_at(h.data() + 56), XXH3_64bits(payload.data(), payload.size()));
  for (int i = 64; i < 88; ++i) EXPECT_EQ(h[i], 0) << "reserved byte " << i;
  EXPECT_EQ(u64_at(h.data() + 88), XXH3_64bits(h.data(), 88));
}

TEST(ChunkFormat, DecodeReturnsFieldsAndPayloadVerifies) {
  const ChunkFormat f = test_format();
  const std::vector<uint8_t> payload = test_payload(f);
  const auto h = encode(f, kKey, payload);
  StatusOr<ChunkHeader> decoded = decode_chunk_header(f, kKey, h);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->key, kKey);
  EXPECT_EQ(decoded->namespace_id.to_hex(), f.namespace_id_hex());
  EXPECT_EQ(decoded->payload_bytes, payload.size());
  EXPECT_EQ(decoded->payload_checksum, XXH3_64bits(payload.data(), payload.size()));
  EXPECT_TRUE(verify_chunk_payload(*decoded, payload).ok());
}

// Decodes `h` and expects a DATA_LOSS naming `what`.
void expect_rejected(const ChunkFormat& f, const ChunkKey& key, std::span<const uint8_t> h,
                     const std::string& what) {
  StatusOr<ChunkHeader> decoded = decode_chunk_header(f, key, h);
  ASSERT_FALSE(decoded.ok()) << what;
  EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(decoded.status().message().find(what), std::string::npos) << decoded.status().message();
}

TEST(ChunkFormat, DecodeRejectsEachWrongField) {
  const ChunkFormat f = test_format();
  const std::vector<uint8_t> payload = test_payload(f);
  const auto good = encode(f, kKey, payload);

  expect_rejected(f, kKey, std::span<const uint8_t>(good).first(95), "95 bytes");

  auto h = good;
  h[0] = 'X';
  expect_rejected(f, kKey, h, "magic");

  h = good;
  h[8] = 1;  // a chunk of the row layout before tiles
  reseal(h);
  expect_rejected(f, kKey, h, "format_version mismatch: file has 1, expected 2");

  h = good;
  h[12] = 64;
  reseal(h);
  expect_rejected(f, kKey, h, "header_bytes mismatch");

  for (int idx : {16, 33, 50, 60, 70, 87, 90}) {
    h = good;
    h[idx] ^= 0x40;
    expect_rejected(f, kKey, h, "checksum mismatch");
  }

  ChunkFormat other = f;
  other.model_fingerprint = "another-model";  // same payload size
  expect_rejected(other, kKey, good, "namespace mismatch");

  const ChunkKey wrong{kKey.low + 1, kKey.high};
  expect_rejected(f, wrong, good,
                  "key mismatch: file has " + kKey.to_hex() + ", expected " + wrong.to_hex());

  const std::vector<uint8_t> short_payload(payload.begin(), payload.end() - 4);
  expect_rejected(f, kKey, encode(f, kKey, short_payload), "payload_bytes mismatch");
}

TEST(ChunkFormat, VerifyPayloadRejectsCorruptOrShortPayload) {
  const ChunkFormat f = test_format();
  std::vector<uint8_t> payload = test_payload(f);
  const auto h = encode(f, kKey, payload);
  const ChunkHeader header = decode_chunk_header(f, kKey, h).value();

  for (size_t idx : {size_t{0}, payload.size() / 2, payload.size() - 1}) {
    std::vector<uint8_t> bad = payload;
    bad[idx] ^= 1;
    Status s = verify_chunk_payload(header, bad);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  }
  payload.pop_back();
  Status s = verify_chunk_payload(header, payload);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("header says"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace strata::offload
