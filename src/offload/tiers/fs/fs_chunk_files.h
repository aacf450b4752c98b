// The filesystem tier's files, without its in-memory state: how chunk files
// are named under a namespace directory (layout in fs_tier.h), whole-file
// vectored I/O, atomic small-file writes, and the namespace checks and scan
// that make_fs_tier runs at startup.
//
// Every function here may block on the filesystem: call them from I/O threads
// or from make_fs_tier, never from the engine thread. Stateless; thread-safe.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "offload/tiers/common/chunk_format.h"

namespace strata::offload::fs_files {

inline constexpr char kChunkExt[] = ".kv";
inline constexpr char kTempExt[] = ".tmp";

// strerror text, thread-safe.
std::string errno_text(int err);

// "/a/b//" -> "/a/b" ("/" stays "/").
std::string strip_trailing_slashes(std::string dir);

// <ns_dir>/<hex[0:3]>/<hex[3:5]>
std::string shard_dir(const std::string& ns_dir, const std::string& key_hex);
// <shard_dir>/<hex>.kv
std::string chunk_file_path(const std::string& ns_dir, const ChunkKey& key);
// "<path>.<16 random hex digits>.tmp": unique per call, for O_CREAT|O_EXCL.
std::string temp_path_for(const std::string& path);

// Write / read all of `iov` at file offset 0, resuming after short transfers
// and EINTR. Return the bytes moved (fewer than asked only at end of file) or
// -errno. `iov` is consumed (its entries are advanced).
int64_t pwritev_all(int fd, iovec* iov, int iovcnt);
int64_t preadv_all(int fd, iovec* iov, int iovcnt);

// mkdir that accepts an existing directory.
Status make_dir(const std::string& dir);
// mkdir -p; the error names the component that could not be created
// (kInvalidArgument for a wrong setting, as check_writable; else kUnavailable).
Status make_dirs(const std::string& dir);

// Writes `bytes` to `path` through a temporary file and rename().
Status write_file_atomically(const std::string& path, const std::string& bytes);

// <ns_dir>/format.txt holds format.namespace_string(): written by the first
// process, compared by every later one (catches an XXH3-128 collision or a
// directory copied by hand). kInvalidArgument if it is a well-formed line
// naming another format. A damaged one (empty, cut short, garbage) is
// rewritten atomically with a warning; kUnavailable if it cannot be read or
// rewritten (I/O error), so the tier starts down and retries.
Status check_format_file(const std::string& ns_dir, const ChunkFormat& format);

// Creates and removes a file in `ns_dir`: the only reliable writability test
// (access() says yes to root on a read-only mount). The error names
// `root_dir` and the errno text; kInvalidArgument for a setting that is wrong
// (EACCES, EROFS, ...), kUnavailable for a failure that may pass (EIO, ENOSPC).
Status check_writable(const std::string& root_dir, const std::string& ns_dir);

struct ScannedFile {
  ChunkKey key;
  int64_t bytes = 0;
  int64_t mtime_ns = 0;
};

// The chunk files under `ns_dir`, oldest mtime first. Deletes files that can
// never load (a chunk name whose size is not `file_bytes`) and temporary files
// older than an hour (a live writer renames within seconds; older ones were
// left by a crash).
std::vector<ScannedFile> scan_namespace(const std::string& ns_dir, int64_t file_bytes);

}  // namespace strata::offload::fs_files
