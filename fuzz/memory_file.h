// MemoryFile: a fuzz input as a file path, for loaders that only open paths
// (MappedFile). One anonymous memfd per process, rewritten on each write(),
// reached as /proc/self/fd/<fd>: no disk I/O and nothing left behind.
// Thread-safety: none; libFuzzer calls a target from one thread.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace strata::fuzz {

class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("strata-fuzz", 0)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { close(fd_); }

  // Replaces the contents with data[0, size); returns the path to open.
  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0 ||
        (size > 0 && pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size))) {
      std::perror("MemoryFile::write");
      std::abort();
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace strata::fuzz
