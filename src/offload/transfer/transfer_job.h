// A copy between the KV pool and host-tier slots, as the scheduler side of
// the connector decides it (offloading_connector_scheduler.h) and the data
// side runs it (kv_transfer_worker.h). Plain data.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::offload {

enum class TransferDirection { kPoolToHost, kHostToPool };

struct ChunkCopy {
  int64_t slot = 0;
  // The copy covers the chunk's blocks [first_block_in_chunk, blocks_per_chunk);
  // the first ones may already be in the pool (a KV-pool prefix hit that ends
  // inside the chunk).
  int64_t first_block_in_chunk = 0;
  std::vector<int32_t> pool_block_ids;  // one per covered block, in order
};

struct TransferJob {
  int64_t job_id = 0;
  TransferDirection direction = TransferDirection::kPoolToHost;
  std::vector<ChunkCopy> copies;
};

struct TransferResult {
  int64_t job_id = 0;
  TransferDirection direction = TransferDirection::kPoolToHost;
  int64_t bytes = 0;
  double seconds = 0;
};

}  // namespace strata::offload
