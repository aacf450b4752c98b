// The filesystem tier: chunks as content-addressed files under a directory
// that any number of Strata processes (or machines, over NFS) may share.
//
// Layout (hex = ChunkKey::to_hex(), 32 digits):
//   <root_dir>/<ChunkFormat::namespace_id_hex()>/format.txt   namespace_string(), written once
//   <root_dir>/<namespace_id_hex>/<hex[0:3]>/<hex[3:5]>/<hex>.kv
// Each file = ChunkHeader + payload (chunk_format.h). Two models or formats
// never share a directory; the header is checked again on every load.
//
// Store: skipped when the file exists (content-addressed, so it is already
// right). Otherwise written to "<name>.<random>.tmp" opened O_CREAT|O_EXCL in
// the same directory, then rename()d over the final name: readers never see
// a partial file. Any error (ENOSPC, EACCES, EIO, short write) removes the
// temporary file and reports the key not ok. A key whose store is already in
// flight (from an earlier job, or twice in one job) is skipped and reported ok.
// No fsync: this is a cache, and a file that a crash leaves empty or partial
// under its final name fails the header/size check on load and is deleted,
// so durability would buy nothing but latency.
//
// Load: reads header and payload into the host slot, verifies header fields
// and payload checksum. A missing, short, corrupt or foreign file fails the
// key; a file that exists but is bad is deleted (self-heal) and the key is
// forgotten, so the next lookup says kMiss.
//
// Lookup: answered from memory (keys this process stored or has seen on
// disk, and recent negative answers); unknown keys are probed by an I/O
// thread (kRetry until the answer arrives). Negative answers expire after
// `miss_ttl_ms` so chunks written meanwhile by other processes are found; each
// probe's answer is delivered at least once, even with miss_ttl_ms = 0. A key
// whose store is in flight answers kRetry. A failed load leaves a negative
// answer, so the next lookup says kMiss at once.
//
// Capacity: with max_bytes > 0 the tier keeps the bytes of files it knows
// (found at startup by scanning its namespace, plus its own writes) under
// max_bytes by deleting its least recently used files before a store
// (lookup hits and loads count as use; files found at startup are ordered by
// mtime). Files being loaded are not evicted; a store that finds no room
// (the cap held by reads and writes in flight) fails. Other processes
// sharing the directory keep their own account, so the cap holds per
// process, not globally. The startup scan also deletes chunk files of the
// wrong size and temporary files older than an hour (left by a crash).
//
// Removals (take_removed, for KV events): every key that leaves the index,
// i.e. a file this process knew of and no longer holds: evicted for
// max_bytes, or deleted or found missing by a failed load.
//
// Stats: load/store_seconds add each job's wall time from its first I/O to
// its last; hit_tokens counts tokens_per_chunk() per chunk loaded.
//
// Threads: n_read_threads serve loads and probes first, n_write_threads serve
// stores first; each kind helps with the other queue when its own is empty.
// Public methods: engine thread, except stats() (any thread); they only
// take a short lock and queue work, never touching the disk. The destructor
// waits for every queued job, then joins the threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

struct FsTierConfig {
  std::string root_dir;
  int n_read_threads = 4;
  int n_write_threads = 4;
  int64_t max_bytes = 0;  // 0 = unbounded
  int64_t miss_ttl_ms = 1000;
  // Testing only: every read sleeps this long first (a slow disk).
  std::chrono::milliseconds debug_read_delay{0};
};

// Creates the namespace directory (and format.txt) and scans existing files.
// Errors (the message names the directory and the errno text):
//   kInvalidArgument  configuration: root_dir empty, not a directory, not
//                     creatable or not writable for lack of permission or on a
//                     read-only mount; a format.txt that names another format.
//   kUnavailable      a disk or mount failing now (EIO, ESTALE, ENOSPC, ...),
//                     or a damaged format.txt that cannot be rewritten: the
//                     connector starts the tier down and retries
//                     (retrying_tier.h).
// A damaged format.txt (empty, cut short, not a format line) is rewritten
// with a warning; see check_format_file (fs_chunk_files.h) for why that is safe.
StatusOr<std::unique_ptr<SecondaryTier>> make_fs_tier(const FsTierConfig& config,
                                                      const ChunkFormat& format,
                                                      const HostRegion& region);

// Path of `key`'s file under `root_dir` for `format` (tests, tools).
std::string fs_tier_chunk_path(const std::string& root_dir, const ChunkFormat& format,
                               const ChunkKey& key);

}  // namespace strata::offload
