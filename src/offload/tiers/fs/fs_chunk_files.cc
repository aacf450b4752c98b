#include "offload/tiers/fs/fs_chunk_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <functional>
#include <random>
#include <system_error>
#include <thread>

#include "base/log.h"

namespace strata::offload::fs_files {
namespace {

constexpr char kFormatFileName[] = "format.txt";
constexpr size_t kKeyHexDigits = 32;
// A writer renames its temporary file within seconds; older ones were left by
// a crashed process and are removed by the startup scan.
constexpr int64_t kStaleTempAgeSeconds = 3600;

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// 32 lowercase hex digits, high word first (the inverse of BlockHash::to_hex).
bool parse_key_hex(const std::string& hex, ChunkKey& key) {
  if (hex.size() != kKeyHexDigits || !is_lower_hex(hex)) return false;
  key.high = std::stoull(hex.substr(0, 16), nullptr, 16);
  key.low = std::stoull(hex.substr(16, 16), nullptr, 16);
  return true;
}

// Moves every byte of `iov` with `op` (preadv or pwritev) starting at file
// offset 0, resuming after short transfers and EINTR. Returns the bytes moved
// (fewer than asked at end of file) or -errno.
template <typename Op>
int64_t transfer_all(Op op, int fd, iovec* iov, int iovcnt) {
  int64_t done = 0;
  while (iovcnt > 0) {
    const ssize_t n = op(fd, iov, iovcnt, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    done += n;
    size_t left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return done;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

StatusOr<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found(path);
    return unavailable("cannot read '" + path + "': " + errno_text(errno));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return unavailable("cannot read '" + path + "': " + errno_text(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Errors that say the operator's root_dir setting is wrong (no permission,
// read-only, a file where a directory belongs), as opposed to a disk or
// mount that is failing now (EIO, ESTALE, ENOSPC, ...), which may pass.
bool is_setting_errno(int err) {
  return err == EACCES || err == EPERM || err == EROFS || err == ENOTDIR || err == EEXIST ||
         err == ENAMETOOLONG || err == ELOOP;
}

Status dir_error(const std::string& message, int err) {
  return is_setting_errno(err) ? invalid_argument(message) : unavailable(message);
}

// One line "strata-kv-v<N>;<name>=<value>;..." of printable ASCII, as
// ChunkFormat::namespace_string() writes them (fields may come and go between
// versions, so only the shape is checked).
bool is_namespace_line(const std::string& text) {
  static const std::string kPrefix = "strata-kv-v";
  if (text.size() < kPrefix.size() + 2 || text.compare(0, kPrefix.size(), kPrefix) != 0 ||
      text.back() != '\n') {
    return false;
  }
  const std::string line = text.substr(0, text.size() - 1);
  if (!std::all_of(line.begin(), line.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    return false;
  }
  size_t pos = line.find(';');
  const std::string version = line.substr(kPrefix.size(), pos - kPrefix.size());
  if (version.empty() || !std::all_of(version.begin(), version.end(), ::isdigit)) return false;
  while (pos != std::string::npos) {
    const size_t next = line.find(';', pos + 1);
    const std::string field = line.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    const size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0 || field.find('=', eq + 1) != std::string::npos) {
      return false;
    }
    pos = next;
  }
  return true;
}

std::string random_hex64() {
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id()));
  static const char kDigits[] = "0123456789abcdef";
  uint64_t v = rng();
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 0xf];
  return out;
}

}  // namespace

std::string errno_text(int err) { return std::system_category().message(err); }

std::string strip_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string shard_dir(const std::string& ns_dir, const std::string& hex) {
  return ns_dir + "/" + hex.substr(0, 3) + "/" + hex.substr(3, 2);
}

std::string chunk_file_path(const std::string& ns_dir, const ChunkKey& key) {
  const std::string hex = key.to_hex();
  return shard_dir(ns_dir, hex) + "/" + hex + kChunkExt;
}

std::string temp_path_for(const std::string& path) {
  return path + "." + random_hex64() + kTempExt;
}

int64_t pwritev_all(int fd, iovec* iov, int iovcnt) {
  return transfer_all(::pwritev, fd, iov, iovcnt);
}
int64_t preadv_all(int fd, iovec* iov, int iovcnt) {
  return transfer_all(::preadv, fd, iov, iovcnt);
}

Status make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return Status::ok_status();
  return unavailable("cannot create directory '" + dir + "': " + errno_text(errno));
}

Status make_dirs(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::ok_status();
    return invalid_argument("'" + dir + "' exists and is not a directory");
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    STRATA_RETURN_IF_ERROR(make_dirs(dir.substr(0, slash)));
  }
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return Status::ok_status();
  const int err = errno;
  return dir_error("cannot create directory '" + dir + "': " + errno_text(err), err);
}

Status write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("cannot create '" + tmp + "': " + errno_text(errno));
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  const int64_t n = pwritev_all(fd, &iov, 1);
  const int close_rc = ::close(fd);
  if (n != static_cast<int64_t>(bytes.size()) || close_rc != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = n < 0 ? static_cast<int>(-n) : errno;
    ::unlink(tmp.c_str());
    return unavailable("cannot write '" + path + "': " + errno_text(err));
  }
  return Status::ok_status();
}

// format.txt names the namespace a directory holds: written once, compared
// by every later process (catches an XXH3-128 collision or a hand-copied dir).
// A well-formed line naming another format is a configuration error; anything
// else (empty, cut short, garbage) is damage, repaired by rewriting the file.
// That is safe: the directory's name is the hash of this format's namespace
// string, and every chunk file's header (namespace id, key, checksums) is
// verified on load, so a rewritten format.txt can never let foreign KV through.
Status check_format_file(const std::string& ns_dir, const ChunkFormat& format) {
  const std::string path = ns_dir + "/" + kFormatFileName;
  const std::string want = format.namespace_string() + "\n";
  StatusOr<std::string> have = read_small_file(path);
  if (have.ok()) {
    if (*have == want) return Status::ok_status();
    if (is_namespace_line(*have)) {
      return invalid_argument("fs tier: '" + path + "' names format '" +
                              have->substr(0, have->size() - 1) + "'; expected '" +
                              format.namespace_string() +
                              "'. The directory holds another KV format; use another root_dir");
    }
    STRATA_LOG(kWarning) << "fs tier: '" << path << "' is damaged (" << have->size()
                         << " bytes, not a format line); rewriting it. Chunk files are still "
                            "verified one by one on load";
  } else if (have.status().code() != StatusCode::kNotFound) {
    return have.status().with_prefix("fs tier");
  }
  Status written = write_file_atomically(path, want);
  if (!written.ok()) return unavailable(written.with_prefix("fs tier").message());
  return Status::ok_status();
}

// Creating (and removing) a file is the only reliable writability test: access()
// says yes to root on a read-only or foreign mount.
Status check_writable(const std::string& root_dir, const std::string& ns_dir) {
  const std::string probe = temp_path_for(ns_dir + "/.write-probe");
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    return dir_error("fs tier: root_dir '" + root_dir + "' is not writable: cannot create '" +
                         probe + "': " + errno_text(err),
                     err);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::ok_status();
}

// Finds the chunk files of a namespace directory. Removes files that can never
// load (a chunk name with the wrong size) and stale temporary files.
std::vector<ScannedFile> scan_namespace(const std::string& ns_dir, int64_t file_bytes) {
  std::vector<ScannedFile> found;
  const int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  for (const std::string& d1 : list_dir(ns_dir)) {
    if (d1.size() != 3 || !is_lower_hex(d1)) continue;
    for (const std::string& d2 : list_dir(ns_dir + "/" + d1)) {
      if (d2.size() != 2 || !is_lower_hex(d2)) continue;
      const std::string dir = ns_dir + "/" + d1 + "/" + d2;
      for (const std::string& name : list_dir(dir)) {
        const std::string path = dir + "/" + name;
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (ends_with(name, kTempExt)) {
          if (now_s - st.st_mtim.tv_sec > kStaleTempAgeSeconds) ::unlink(path.c_str());
          continue;
        }
        ChunkKey key;
        const size_t ext = std::char_traits<char>::length(kChunkExt);
        if (!ends_with(name, kChunkExt) || !parse_key_hex(name.substr(0, name.size() - ext), key) ||
            name.compare(0, 3, d1) != 0 || name.compare(3, 2, d2) != 0) {
          continue;
        }
        if (st.st_size != file_bytes) {
          ::unlink(path.c_str());
          continue;
        }
        found.push_back(
            {key, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
      }
    }
  }
  std::sort(found.begin(), found.end(),
            [](const ScannedFile& a, const ScannedFile& b) { return a.mtime_ns < b.mtime_ns; });
  return found;
}

}  // namespace strata::offload::fs_files
