// The chunks one instance exposes to its peers: a bounded, LRU-evicted map
// from chunk key to the framed chunk (ChunkHeader + payload, exactly the CHUNK
// message body), in memory.
//
// Why a copy and not the host tier's slots: the host tier's bookkeeping
// (states, pins, eviction) belongs to the engine thread, and its slots are
// reused as soon as it evicts; peer requests arrive on server threads at any
// time. A private copy lets server threads serve without touching engine
// state and keeps a chunk valid while it is being sent (entries are
// shared_ptrs: eviction drops the map's reference, a send in progress keeps
// its own). The cost is memory: up to max_bytes on top of the host tier,
// i.e. (kHeaderBytes + payload_bytes) per exposed chunk.
//
// Thread-safety: every method takes an internal lock; callable from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "offload/tiers/common/chunk_format.h"

namespace strata::offload {

class P2pChunkStore {
 public:
  using Chunk = std::shared_ptr<const std::vector<uint8_t>>;  // header + payload

  struct PutResult {
    bool is_stored = false;   // false: already present, or larger than max_bytes
    int64_t num_evicted = 0;  // least recently used chunks dropped to make room
  };

  explicit P2pChunkStore(int64_t max_bytes) : max_bytes_(max_bytes) {}

  PutResult put(const ChunkKey& key, Chunk chunk);
  // Counts as a use (LRU).
  bool contains(const ChunkKey& key);
  // nullptr when absent; counts as a use.
  Chunk get(const ChunkKey& key);

  int64_t max_bytes() const { return max_bytes_; }
  int64_t used_bytes() const;
  int64_t num_chunks() const;

 private:
  struct Entry {
    Chunk chunk;
    std::list<ChunkKey>::iterator lru_pos;
  };

  const int64_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<ChunkKey, Entry, kv::BlockHashHasher> entries_;
  std::list<ChunkKey> lru_;  // front = least recently used
  int64_t used_bytes_ = 0;
};

}  // namespace strata::offload
