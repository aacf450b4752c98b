#include "runner/model_runner.h"

#include <algorithm>

#include "base/check.h"

namespace strata::runner {

ModelRunner::ModelRunner(const model::Model& model, int64_t num_blocks, int64_t block_size,
                         ThreadPool& pool)
    : model_(model), arena_(model.make_kv_arena(num_blocks, block_size)), pool_(pool) {}

void ModelRunner::add_request(kv::RequestKey key, const sampling::SamplingParams& params,
                              int num_top_logprobs) {
  requests_.insert_or_assign(key, RequestState{sampling::Sampler(params), num_top_logprobs});
}

void ModelRunner::remove_request(kv::RequestKey key) { requests_.erase(key); }

model::ForwardBatch ModelRunner::build_batch(const scheduler::SchedulerOutput& output,
                                             const kv::KvCacheManager& kv) const {
  model::ForwardBatch batch;
  attention::AttentionMetadata& md = batch.attn;
  const int64_t block_size = arena_.block_size();
  size_t max_blocks = 1;
  for (const auto& s : output.scheduled) {
    max_blocks = std::max(max_blocks, kv.block_ids(s.request->key()).size());
  }
  md.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
  md.query_start_loc.push_back(0);
  for (const auto& s : output.scheduled) {
    const std::vector<int32_t>& blocks = kv.block_ids(s.request->key());
    const std::vector<int32_t>& ids = s.request->all_token_ids();
    for (int64_t i = 0; i < s.num_new_tokens; ++i) {
      const int64_t pos = s.num_computed_tokens + i;
      batch.token_ids.push_back(ids[pos]);
      batch.positions.push_back(static_cast<int32_t>(pos));
      md.slot_mapping.push_back(int64_t{blocks[pos / block_size]} * block_size + pos % block_size);
    }
    md.query_start_loc.push_back(md.query_start_loc.back() +
                                 static_cast<int32_t>(s.num_new_tokens));
    md.seq_lens.push_back(static_cast<int32_t>(s.num_computed_tokens + s.num_new_tokens));
    std::vector<int32_t> row(blocks);
    row.resize(max_blocks, 0);
    md.block_tables.insert(md.block_tables.end(), row.begin(), row.end());
    if (s.samples) batch.logits_indices.push_back(md.query_start_loc.back() - 1);
  }
  return batch;
}

std::vector<SampledToken> ModelRunner::execute(const scheduler::SchedulerOutput& output,
                                               const kv::KvCacheManager& kv) {
  std::vector<SampledToken> result(output.scheduled.size());
  if (output.scheduled.empty()) return result;
  model::ForwardBatch batch = build_batch(output, kv);
  const int64_t vocab = model_.vocab_size();
  std::vector<float> logits(batch.logits_indices.size() * vocab);
  model_.forward(batch, arena_, logits.data(), pool_);
  num_forward_tokens_ += static_cast<int64_t>(batch.token_ids.size());

  size_t row = 0;
  for (size_t i = 0; i < output.scheduled.size(); ++i) {
    if (!output.scheduled[i].samples) continue;
    const float* l = logits.data() + row++ * vocab;
    auto it = requests_.find(output.scheduled[i].request->key());
    STRATA_CHECK(it != requests_.end()) << "request was never added to the runner";
    SampledToken& out = result[i];
    out.token_id = it->second.sampler.sample(l, vocab);
    out.logprob = sampling::token_logprob(l, vocab, out.token_id);
    if (it->second.num_top_logprobs > 0) {
      out.top_logprobs = sampling::top_logprobs(l, vocab, it->second.num_top_logprobs);
    }
  }
  return result;
}

}  // namespace strata::runner
