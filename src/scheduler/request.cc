#include "scheduler/request.h"

namespace strata::scheduler {

bool is_finished(RequestStatus status) {
  return status == RequestStatus::kFinishedStopped || status == RequestStatus::kFinishedLength ||
         status == RequestStatus::kFinishedAborted;
}

Request::Request(std::string request_id, kv::RequestKey key, std::vector<int32_t> prompt_token_ids,
                 StopConditions stop, const kv::BlockHash& root_hash, int64_t block_size)
    : request_id_(std::move(request_id)),
      key_(key),
      stop_(std::move(stop)),
      num_prompt_tokens_(static_cast<int64_t>(prompt_token_ids.size())),
      all_token_ids_(std::move(prompt_token_ids)),
      root_hash_(root_hash),
      block_size_(block_size) {
  kv::extend_block_hashes(root_hash_, all_token_ids_, block_size_, block_hashes_);
}

void Request::append_output_token(int32_t token) {
  all_token_ids_.push_back(token);
  kv::extend_block_hashes(root_hash_, all_token_ids_, block_size_, block_hashes_);
}

}  // namespace strata::scheduler
