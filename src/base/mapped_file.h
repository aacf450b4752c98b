// A read-only memory mapping of a whole file. Model weights are used straight
// from the mapping (no copy) when their stored dtype is the compute dtype.
// Thread-safe for concurrent reads; the mapping lives as long as the object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace strata {

class MappedFile {
 public:
  // Maps `path` read-only. Errors name the path and the OS reason.
  static StatusOr<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }
  bool contains(const void* begin, size_t bytes) const;
  // Drops this process's pages of [begin, begin + bytes) (whole pages inside
  // the range only) once the bytes have been copied elsewhere; a later read
  // faults them back in from the file, so the contents never change.
  // Keeps RSS at one copy of weights that are fused at load.
  void release_pages(const void* begin, size_t bytes) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

// Asks the kernel to back [data, data + bytes) with transparent huge pages
// (madvise MADV_HUGEPAGE; advisory, a no-op where THP is off). For large,
// long-lived buffers read at memory bandwidth (weights copied at load, the KV
// pool): file mappings of the page cache may already get large folios, and
// 4 KiB anonymous pages would then read slower through the TLB.
// `data` should be 2 MiB aligned (kHugePageBytes).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
void advise_huge_pages(void* data, size_t bytes);

// Reads a whole (small) file into a string: config and tokenizer files.
StatusOr<std::string> read_file_to_string(const std::string& path);

}  // namespace strata
