// Per-request KV block tables over the BlockPool, with prefix caching:
// vLLM v1's KVCacheManager in our vocabulary.
//
// For request r with N computed tokens its block table holds
// ceil(N / block_size) blocks (more once slots for new tokens are allocated);
// token t of r lives in block table[t / block_size] at offset t % block_size:
//
//   tokens   [0 ........ 15][16 ....... 31][32 .. 37 ]
//   table    [   block 7   ][   block 2   ][ block 9 ]   (block_size 16)
//
// The first blocks of a table may be shared with other requests (prefix hits,
// ref-counted). Full blocks whose content is known are cached under their
// chained hash (kv/block_hash.h) as soon as they are allocated for computation.
//
// Running out of blocks is a return value (allocate_slots returns false and
// changes nothing): the scheduler then preempts or waits.
// Not thread-safe: engine thread only.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace strata::kv {

using RequestKey = int64_t;

struct ComputedBlocks {
  std::vector<int32_t> block_ids;  // cached blocks covering the prefix
  int64_t num_computed_tokens = 0;  // block_ids.size() * block_size
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_caching);

  int32_t block_size() const { return block_size_; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // Longest run of leading full blocks whose hashes are cached. Stops one
  // token short of `num_tokens` (the last token is always computed so the
  // step produces logits). Changes nothing (see record_query).
  ComputedBlocks get_computed_blocks(std::span<const BlockHash> block_hashes,
                                     int64_t num_tokens) const;
  // Counts one prefix-cache query in the pool's stats, when the scheduler
  // admits the request (a request that waits is asked again; that is not a
  // new query).
  void record_query(int64_t num_tokens, int64_t num_hit_tokens);

  // Gives request `key` room for `num_new_tokens` more tokens after its
  // `num_computed_tokens` (which include `new_computed`, blocks from
  // get_computed_blocks that the request takes now). Caches the blocks that
  // are full after this step and whose hash is in `block_hashes`. Returns false and changes nothing when
  // the pool cannot supply the blocks.
  // `token_ids` (the sequence's tokens) only feed KV events; may be empty.
  bool allocate_slots(RequestKey key, int64_t num_computed_tokens, int64_t num_new_tokens,
                      const ComputedBlocks& new_computed, std::span<const BlockHash> block_hashes,
                      std::span<const int32_t> token_ids = {});

  // Caches the blocks of `key` that are full within its first `num_tokens`
  // tokens and whose hash is in `block_hashes`. Blocks are cached as soon as
  // the step that computes them is scheduled: within one forward pass every
  // sequence's K/V of a layer is written before any attention of that layer
  // reads, so a request scheduled in the same step may already share them.
  void cache_full_blocks(RequestKey key, std::span<const BlockHash> block_hashes,
                         int64_t num_tokens, std::span<const int32_t> token_ids = {});

  // Releases all of the request's blocks (tail first, so its last blocks are
  // evicted first). Safe to call for unknown keys.
  void free(RequestKey key);

  const std::vector<int32_t>& block_ids(RequestKey key) const;
  // Blocks a new request of `num_tokens` would need (ignoring prefix hits).
  int64_t num_blocks_for(int64_t num_tokens) const;

 private:
  struct RequestBlocks {
    std::vector<int32_t> block_ids;
    int64_t num_cached_blocks = 0;  // leading blocks already registered in the cache
  };

  BlockPool pool_;
  int32_t block_size_;
  std::unordered_map<RequestKey, RequestBlocks> requests_;
};

}  // namespace strata::kv
