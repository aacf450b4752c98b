#include "events/kv_event.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::events {
namespace {

std::string hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

constexpr double kTs = 1757500000.25;

// One batch with every event kind, hashes that need uint64, a parent, tokens
// in four integer widths, each medium, and locality on the offload events.
std::vector<KvEvent> sample_events() {
  BlockStored gpu;
  gpu.block_hashes = {0xdeadbeef12345678ull, 0xffffffffffffffffull};
  gpu.token_ids = {1, 2, 128, 65536};
  gpu.block_size = 2;
  gpu.medium = kMediumGpu;
  BlockStored cpu;
  cpu.block_hashes = {7};
  cpu.parent_block_hash = 0xffffffffffffffffull;
  cpu.block_size = 16;
  cpu.medium = kMediumCpu;
  cpu.locality = "LOCAL";
  BlockRemoved removed;
  removed.block_hashes = {0x8000000000000001ull};
  removed.medium = kMediumStorage;
  removed.locality = "REMOTE";
  return {gpu, cpu, removed, AllBlocksCleared{}};
}

// Golden payloads. Produced by msgpack-python 1.0.3 (packb, use_bin_type=True),
// which picks the same shortest forms as msgspec, from the Python values that
// vLLM's structs encode to:
//   [ts, [["BlockStored", [h1, h2], None, [1, 2, 128, 65536], 2, None, "GPU", None],
//         ["BlockStored", [7], 2**64-1, [], 16, None, "CPU", None],
//         ["BlockRemoved", [0x8000000000000001], "STORAGE"],
//         ["AllBlocksCleared"]], 0]
// and the same events as {"type": ..., field: value, ...} maps (locality kept).
constexpr const char* kArrayGolden =
    "93cb41da305498100000"                    // [ts (float64),
    "94"                                      //  [4 events:
    "98ab426c6f636b53746f726564"              // ["BlockStored" (8 elements)
    "92cfdeadbeef12345678cfffffffffffffffff"  // [h1, h2]
    "c0"                                      // parent nil
    "940102cc80ce00010000"                    // [1, 2, 128, 65536]
    "02c0a3475055c0"                          // 2, nil, "GPU", nil]
    "98ab426c6f636b53746f726564"
    "9107"
    "cfffffffffffffffff"
    "90"
    "10c0a3435055c0"
    "93ac426c6f636b52656d6f766564"
    "91cf8000000000000001"
    "a753544f52414745"
    "91b0416c6c426c6f636b73436c6561726564"
    "00";  // data_parallel_rank 0]

constexpr const char* kMapGolden =
    "93cb41da3054981000009488a474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657392cfde"
    "adbeef12345678cfffffffffffffffffb1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473"
    "940102cc80ce00010000aa626c6f636b5f73697a6502a76c6f72615f6964c0a66d656469756da3475055a96c6f"
    "72615f6e616d65c089a474797065ab426c6f636b53746f726564ac626c6f636b5f6861736865739107b1706172"
    "656e745f626c6f636b5f68617368cfffffffffffffffffa9746f6b656e5f69647390aa626c6f636b5f73697a65"
    "10a76c6f72615f6964c0a66d656469756da3435055a96c6f72615f6e616d65c0a86c6f63616c697479a54c4f43"
    "414c84a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391cf8000000000000001a6"
    "6d656469756da753544f52414745a86c6f63616c697479a652454d4f544581a474797065b0416c6c426c6f636b"
    "73436c656172656400";

TEST(KvEvent, ArrayLayoutMatchesVllmBytes) {
  EXPECT_EQ(hex(encode_event_batch(kTs, sample_events(), EventEncoding::kArray)), kArrayGolden);
}

TEST(KvEvent, MapLayoutMatchesVllmBytes) {
  EXPECT_EQ(hex(encode_event_batch(kTs, sample_events(), EventEncoding::kMap)), kMapGolden);
}

TEST(KvEvent, EmptyBatchAndRank) {
  // [1.0, [], 3]
  EXPECT_EQ(hex(encode_event_batch(1.0, {}, EventEncoding::kArray, 3)),
            "93cb3ff000000000000090"
            "03");
}

TEST(KvEvent, EmptyMediumIsNilAndLoraIdIsWritten) {
  BlockStored e;
  e.block_hashes = {1};
  e.block_size = 16;
  e.lora_id = -1;
  // ["BlockStored", [1], nil, [], 16, -1, nil, nil]
  EXPECT_EQ(hex(encode_event_batch(1.0, {e}, EventEncoding::kArray)),
            "93cb3ff0000000000000"
            "91"
            "98ab426c6f636b53746f726564"
            "9101c090"
            "10ffc0c0"
            "00");
}

TEST(KvEvent, LongTokenListsUseArray16) {
  BlockStored e;
  e.block_hashes = {1};
  e.token_ids.assign(16, 5);
  e.block_size = 16;
  const std::string bytes = hex(encode_event_batch(1.0, {e}, EventEncoding::kArray));
  EXPECT_NE(bytes.find("dc0010"
                       "05050505050505050505050505050505"),
            std::string::npos);
}

TEST(KvEvent, EventHashIsTheLowWordOfTheBlockHash) {
  const kv::BlockHash h{.low = 0x0123456789abcdefull, .high = 0xfedcba9876543210ull};
  EXPECT_EQ(to_event_hash(h), 0x0123456789abcdefull);
  // The last 16 hex digits of the canonical (big-endian) form.
  EXPECT_EQ(h.to_hex().substr(16), "0123456789abcdef");
}

}  // namespace
}  // namespace strata::events
