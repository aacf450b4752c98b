// The flat-batch description one forward pass runs over (vLLM's attention
// metadata): tokens of many sequences laid end to end, where each token's K/V
// goes (slot mapping) and where each sequence's context lives (block tables).
//
// Sequence s owns tokens [query_start_loc[s], query_start_loc[s+1]) of the
// batch; they are its last n_s positions, so its context after this step is
// seq_lens[s] tokens and its first new token sits at position seq_lens[s] - n_s.
// Plain data, built by the runner on the engine thread.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::attention {

struct AttentionMetadata {
  std::vector<int64_t> slot_mapping;     // [num_tokens] block_id * block_size + offset
  std::vector<int32_t> query_start_loc;  // [num_seqs + 1]
  std::vector<int32_t> seq_lens;         // [num_seqs]
  std::vector<int32_t> block_tables;     // [num_seqs, max_blocks_per_seq], row-major
  int32_t max_blocks_per_seq = 0;

  int32_t num_seqs() const { return static_cast<int32_t>(seq_lens.size()); }
  int64_t num_tokens() const { return static_cast<int64_t>(slot_mapping.size()); }
};

}  // namespace strata::attention
