#include "events/msgpack_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace strata::events {
namespace {

// The writer's bytes as lowercase hex, for readable comparisons.
std::string hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

template <typename Fn>
std::string encode(Fn fn) {
  MsgpackWriter w;
  fn(w);
  return hex(w.bytes());
}

TEST(MsgpackWriter, NilAndBool) {
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_nil(); }), "c0");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_bool(false); }), "c2");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_bool(true); }), "c3");
}

TEST(MsgpackWriter, UnsignedIntegersTakeTheShortestForm) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, "00"},
      {1, "01"},
      {127, "7f"},
      {128, "cc80"},
      {255, "ccff"},
      {256, "cd0100"},
      {65535, "cdffff"},
      {65536, "ce00010000"},
      {4294967295ull, "ceffffffff"},
      {4294967296ull, "cf0000000100000000"},
      {0xdeadbeef12345678ull, "cfdeadbeef12345678"},
      {std::numeric_limits<uint64_t>::max(), "cfffffffffffffffff"},
  };
  for (const auto& [value, bytes] : cases) {
    EXPECT_EQ(encode([v = value](MsgpackWriter& w) { w.write_uint(v); }), bytes) << value;
  }
}

TEST(MsgpackWriter, SignedIntegersTakeTheShortestForm) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "00"},
      {127, "7f"},
      {128, "cc80"},  // non-negative values use the unsigned forms
      {-1, "ff"},
      {-32, "e0"},
      {-33, "d0df"},
      {-128, "d080"},
      {-129, "d1ff7f"},
      {-32768, "d18000"},
      {-32769, "d2ffff7fff"},
      {std::numeric_limits<int32_t>::min(), "d280000000"},
      {static_cast<int64_t>(std::numeric_limits<int32_t>::min()) - 1, "d3ffffffff7fffffff"},
      {std::numeric_limits<int64_t>::min(), "d38000000000000000"},
      {std::numeric_limits<int64_t>::max(), "cf7fffffffffffffff"},
  };
  for (const auto& [value, bytes] : cases) {
    EXPECT_EQ(encode([v = value](MsgpackWriter& w) { w.write_int(v); }), bytes) << value;
  }
}

TEST(MsgpackWriter, Float64IsBigEndianIeee754) {
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_float64(1.0); }), "cb3ff0000000000000");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_float64(-2.5); }), "cbc004000000000000");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_float64(1757500000.25); }), "cb41da305498100000");
}

TEST(MsgpackWriter, Strings) {
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(""); }), "a0");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str("GPU"); }), "a3475055");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(std::string(31, 'x')); }),
            "bf" + hex(std::string(31, 'x')));
  // 32 bytes is the first str8 (msgspec and msgpack-python write str8 too).
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(std::string(32, 'a')); }).substr(0, 4),
            "d920");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(std::string(255, 'a')); }).substr(0, 4),
            "d9ff");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(std::string(256, 'a')); }).substr(0, 6),
            "da0100");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_str(std::string(65536, 'a')); }).substr(0, 10),
            "db00010000");
  MsgpackWriter w;
  w.write_str(std::string(300, 'a'));
  EXPECT_EQ(w.bytes().size(), 3u + 300u);
}

TEST(MsgpackWriter, Binary) {
  const std::vector<uint8_t> three = {1, 2, 0xff};
  EXPECT_EQ(encode([&](MsgpackWriter& w) { w.write_bin(three); }),
            "c403"
            "0102ff");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_bin({}); }), "c400");
  const std::vector<uint8_t> big(256, 7);
  EXPECT_EQ(encode([&](MsgpackWriter& w) { w.write_bin(big); }).substr(0, 6), "c50100");
  const std::vector<uint8_t> huge(65536, 7);
  EXPECT_EQ(encode([&](MsgpackWriter& w) { w.write_bin(huge); }).substr(0, 10), "c600010000");
}

TEST(MsgpackWriter, ArrayAndMapHeaders) {
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_array_header(0); }), "90");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_array_header(15); }), "9f");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_array_header(16); }), "dc0010");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_array_header(65535); }), "dcffff");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_array_header(65536); }), "dd00010000");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_map_header(0); }), "80");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_map_header(15); }), "8f");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_map_header(16); }), "de0010");
  EXPECT_EQ(encode([](MsgpackWriter& w) { w.write_map_header(70000); }), "df00011170");
}

TEST(MsgpackWriter, NestedValue) {
  // [1, "a", nil, true] from the MessagePack spec's examples.
  EXPECT_EQ(encode([](MsgpackWriter& w) {
              w.write_array_header(4);
              w.write_uint(1);
              w.write_str("a");
              w.write_nil();
              w.write_bool(true);
            }),
            "9401a161c0c3");
}

}  // namespace
}  // namespace strata::events
