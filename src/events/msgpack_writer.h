// A small MessagePack encoder: nil, bool, integers, float64, str, bin, array
// and map headers, written into one growing byte string.
//
// Every value takes the shortest form the MessagePack spec allows, which is
// also what Python's msgspec (vLLM's encoder) and msgpack-python write:
//   integers >= 0: positive fixint (< 128), uint8, uint16, uint32, uint64;
//   integers < 0:  negative fixint (>= -32), int8, int16, int32, int64;
//   floats:        always float64 (0xcb), as msgspec writes Python floats;
//   str:           fixstr (< 32 bytes), str8, str16, str32;
//   bin:           bin8, bin16, bin32;
//   array / map:   fix (< 16 entries), 16-bit, 32-bit length.
// All multi-byte numbers are big-endian. Containers are written as a header
// followed by their elements: the caller writes exactly the count it declared.
//
// Not thread-safe; one writer per encoding.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace strata::events {

class MsgpackWriter {
 public:
  void write_nil();
  void write_bool(bool value);
  void write_uint(uint64_t value);
  void write_int(int64_t value);  // non-negative values use the unsigned forms
  void write_float64(double value);
  void write_str(std::string_view utf8);
  void write_bin(std::span<const uint8_t> bytes);
  void write_array_header(uint32_t num_elements);
  void write_map_header(uint32_t num_pairs);

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void put_byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void put_be(uint64_t value, int num_bytes);
  // `tag` then a big-endian length of 1, 2 or 4 bytes, chosen by the caller.
  void put_length(uint8_t tag8, uint8_t tag16, uint8_t tag32, uint32_t length);

  std::string out_;
};

}  // namespace strata::events
