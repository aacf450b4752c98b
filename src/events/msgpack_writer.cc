#include "events/msgpack_writer.h"

#include <cstring>
#include <limits>

#include "base/check.h"

namespace strata::events {

void MsgpackWriter::put_be(uint64_t value, int num_bytes) {
  for (int shift = (num_bytes - 1) * 8; shift >= 0; shift -= 8) {
    put_byte(static_cast<uint8_t>(value >> shift));
  }
}

void MsgpackWriter::put_length(uint8_t tag8, uint8_t tag16, uint8_t tag32, uint32_t length) {
  if (length <= 0xff && tag8 != 0) {
    put_byte(tag8);
    put_be(length, 1);
  } else if (length <= 0xffff) {
    put_byte(tag16);
    put_be(length, 2);
  } else {
    put_byte(tag32);
    put_be(length, 4);
  }
}

void MsgpackWriter::write_nil() { put_byte(0xc0); }

void MsgpackWriter::write_bool(bool value) { put_byte(value ? 0xc3 : 0xc2); }

void MsgpackWriter::write_uint(uint64_t value) {
  if (value < 0x80) {
    put_byte(static_cast<uint8_t>(value));
  } else if (value <= 0xff) {
    put_byte(0xcc);
    put_be(value, 1);
  } else if (value <= 0xffff) {
    put_byte(0xcd);
    put_be(value, 2);
  } else if (value <= 0xffffffffull) {
    put_byte(0xce);
    put_be(value, 4);
  } else {
    put_byte(0xcf);
    put_be(value, 8);
  }
}

void MsgpackWriter::write_int(int64_t value) {
  if (value >= 0) {
    write_uint(static_cast<uint64_t>(value));
    return;
  }
  const auto bits = static_cast<uint64_t>(value);
  if (value >= -32) {
    put_byte(static_cast<uint8_t>(bits));  // negative fixint 0xe0..0xff
  } else if (value >= std::numeric_limits<int8_t>::min()) {
    put_byte(0xd0);
    put_be(bits, 1);
  } else if (value >= std::numeric_limits<int16_t>::min()) {
    put_byte(0xd1);
    put_be(bits, 2);
  } else if (value >= std::numeric_limits<int32_t>::min()) {
    put_byte(0xd2);
    put_be(bits, 4);
  } else {
    put_byte(0xd3);
    put_be(bits, 8);
  }
}

void MsgpackWriter::write_float64(double value) {
  uint64_t bits = 0;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, sizeof(bits));
  put_byte(0xcb);
  put_be(bits, 8);
}

void MsgpackWriter::write_str(std::string_view utf8) {
  STRATA_CHECK(utf8.size() <= std::numeric_limits<uint32_t>::max());
  const auto length = static_cast<uint32_t>(utf8.size());
  if (length < 32) {
    put_byte(static_cast<uint8_t>(0xa0 | length));
  } else {
    put_length(0xd9, 0xda, 0xdb, length);
  }
  out_.append(utf8);
}

void MsgpackWriter::write_bin(std::span<const uint8_t> bytes) {
  STRATA_CHECK(bytes.size() <= std::numeric_limits<uint32_t>::max());
  put_length(0xc4, 0xc5, 0xc6, static_cast<uint32_t>(bytes.size()));
  out_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void MsgpackWriter::write_array_header(uint32_t num_elements) {
  if (num_elements < 16) {
    put_byte(static_cast<uint8_t>(0x90 | num_elements));
  } else {
    put_length(0, 0xdc, 0xdd, num_elements);
  }
}

void MsgpackWriter::write_map_header(uint32_t num_pairs) {
  if (num_pairs < 16) {
    put_byte(static_cast<uint8_t>(0x80 | num_pairs));
  } else {
    put_length(0, 0xde, 0xdf, num_pairs);
  }
}

}  // namespace strata::events
