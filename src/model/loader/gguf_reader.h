// Bounds-checked little-endian cursor over a byte range, for the GGUF parser.
// Every read checks the remaining bytes first; a short read is a kDataLoss
// Status naming the file, the byte offset and what was being read.
// Internal to the loader. Threading: one cursor per thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "base/status.h"

namespace strata::model::internal {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size_bytes, const std::string& path)
      : data_(data), size_bytes_(size_bytes), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_bytes_ - pos_; }
  void seek(uint64_t pos) { pos_ = pos <= size_bytes_ ? pos : size_bytes_; }
  const std::string& path() const { return path_; }

  // Reads a little-endian scalar of sizeof(T) bytes.
  template <typename T>
  Status read(T* out, const char* what) {
    STRATA_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status();
  }

  // A GGUF string: u64 length then bytes (not NUL-terminated).
  Status read_string(std::string* out, const char* what) {
    uint64_t length = 0;
    STRATA_RETURN_IF_ERROR(read(&length, what));
    STRATA_RETURN_IF_ERROR(need(length, what));
    out->assign(reinterpret_cast<const char*>(data_ + pos_), length);
    pos_ += length;
    return Status();
  }

  // Advances `count` items of `item_bytes` each, checking for overflow.
  Status skip(uint64_t count, uint64_t item_bytes, const char* what) {
    uint64_t total = 0;
    if (__builtin_mul_overflow(count, item_bytes, &total)) return truncated(what, UINT64_MAX);
    STRATA_RETURN_IF_ERROR(need(total, what));
    pos_ += total;
    return Status();
  }

  Status need(uint64_t bytes, const char* what) const {
    return bytes <= remaining() ? Status() : truncated(what, bytes);
  }

  Status truncated(const std::string& what, uint64_t bytes) const {
    return data_loss(path_ + ": truncated or corrupt at byte " + std::to_string(pos_) +
                     " reading " + what + ": needs " + std::to_string(bytes) + " bytes, " +
                     std::to_string(remaining()) + " left of " + std::to_string(size_bytes_));
  }

 private:
  const uint8_t* data_;
  uint64_t size_bytes_;
  uint64_t pos_ = 0;
  const std::string& path_;
};

}  // namespace strata::model::internal
