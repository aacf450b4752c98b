#include "runner/model_runner.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace strata::runner {

ModelRunner::ModelRunner(const model::Model& model, backend::KvMemoryHandle kv_memory,
                         backend::Backend& backend, ThreadPool* sampling_pool)
    : model_(model),
      kv_memory_(std::move(kv_memory)),
      backend_(backend),
      workspace_(model.make_workspace(backend)),
      sampling_pool_(sampling_pool),
      masked_logits_(static_cast<size_t>(sampling_pool != nullptr ? sampling_pool->num_threads()
                                                                   : 1)) {}

void ModelRunner::add_request(kv::RequestKey key, const sampling::SamplingParams& params,
                              int num_top_logprobs, int num_prompt_logprobs,
                              TokenConstraintSpec constraints) {
  RequestState state{sampling::Sampler(params), num_top_logprobs, num_prompt_logprobs, 0, nullptr};
  if (!constraints.empty()) {
    state.constraints = std::make_unique<TokenConstraints>(std::move(constraints));
  }
  requests_.insert_or_assign(key, std::move(state));
}

void ModelRunner::remove_request(kv::RequestKey key) { requests_.erase(key); }

void ModelRunner::add_token(model::ForwardBatch& batch, const std::vector<int32_t>& blocks,
                            int32_t token_id, int64_t pos) const {
  const int64_t block_size = kv_memory_->block_size();
  batch.token_ids.push_back(token_id);
  batch.positions.push_back(static_cast<int32_t>(pos));
  batch.attn.slot_mapping.push_back(int64_t{blocks[pos / block_size]} * block_size +
                                    pos % block_size);
}

model::ForwardBatch ModelRunner::build_batch(const scheduler::SchedulerOutput& output,
                                             const kv::KvCacheManager& kv,
                                             std::vector<LogitsRow>& rows) const {
  model::ForwardBatch batch;
  attention::AttentionMetadata& md = batch.attn;
  size_t max_blocks = 1;
  for (const auto& s : output.scheduled) {
    max_blocks = std::max(max_blocks, kv.block_ids(s.request->key()).size());
  }
  md.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
  md.query_start_loc.push_back(0);
  for (size_t entry = 0; entry < output.scheduled.size(); ++entry) {
    const scheduler::ScheduledRequest& s = output.scheduled[entry];
    const std::vector<int32_t>& blocks = kv.block_ids(s.request->key());
    const std::vector<int32_t>& ids = s.request->all_token_ids();
    auto state = requests_.find(s.request->key());
    const bool wants_prompt_logprobs =
        state != requests_.end() && state->second.num_prompt_logprobs >= 0;
    for (int64_t i = 0; i < s.num_new_tokens; ++i) {
      const int64_t pos = s.num_computed_tokens + i;
      if (wants_prompt_logprobs && pos + 1 < s.request->num_prompt_tokens() &&
          pos >= state->second.num_prompt_logprobs_done) {
        batch.logits_indices.push_back(static_cast<int32_t>(batch.token_ids.size()));
        rows.push_back({entry, pos, false});
      }
      add_token(batch, blocks, ids[pos], pos);
    }
    // Draft tokens follow the request's own tokens at the next positions.
    const int64_t first_draft_pos = s.num_computed_tokens + s.num_new_tokens;
    for (int64_t j = 0; j < s.num_draft_tokens(); ++j) {
      add_token(batch, blocks, s.draft_token_ids[j], first_draft_pos + j);
    }
    const int64_t num_scheduled = s.num_scheduled_tokens();
    md.query_start_loc.push_back(md.query_start_loc.back() + static_cast<int32_t>(num_scheduled));
    md.seq_lens.push_back(static_cast<int32_t>(s.num_computed_tokens + num_scheduled));
    std::vector<int32_t> row(blocks);
    row.resize(max_blocks, 0);
    md.block_tables.insert(md.block_tables.end(), row.begin(), row.end());
    if (s.samples) {
      // One row after the last own token, then one after each draft: row j
      // checks draft j (the last row gives the bonus token).
      const int32_t last_own =
          md.query_start_loc.back() - 1 - static_cast<int32_t>(s.num_draft_tokens());
      for (int32_t j = 0; j <= s.num_draft_tokens(); ++j) {
        batch.logits_indices.push_back(last_own + j);
        rows.push_back({entry, first_draft_pos - 1 + j, true});
      }
    }
  }
  return batch;
}

void ModelRunner::sample_row(const scheduler::ScheduledRequest& s, RequestState& state,
                             const float* logits, std::span<const int32_t> generated, int thread,
                             SampledToken& out) {
  const int64_t vocab = model_.vocab_size();
  const std::vector<int32_t>& ids = s.request->all_token_ids();
  std::span<const int32_t> prompt(ids.data(), s.request->num_prompt_tokens());
  if (state.constraints != nullptr) {
    std::vector<float>& masked = masked_logits_[static_cast<size_t>(thread)];
    masked.resize(static_cast<size_t>(vocab));
    state.constraints->apply(logits, masked.data(), vocab, generated);
    out.token_id = state.sampler.sample(masked.data(), vocab, prompt, generated);
    state.constraints->accept(out.token_id, generated);
  } else {
    out.token_id = state.sampler.sample(logits, vocab, prompt, generated);
  }
  if (state.num_top_logprobs < 0) return;
  sampling::TokenLogprobs lp =
      sampling::token_logprobs(logits, vocab, out.token_id, state.num_top_logprobs);
  out.logprob = lp.logprob;
  out.top_logprobs = std::move(lp.top);
}

void ModelRunner::sample_verified(const scheduler::ScheduledRequest& s, RequestState& state,
                                  const float* logits, int thread,
                                  std::vector<SampledToken>& out) {
  const std::vector<int32_t>& ids = s.request->all_token_ids();
  const int64_t num_prompt = s.request->num_prompt_tokens();
  std::span<const int32_t> generated(ids.data() + num_prompt, ids.size() - num_prompt);
  if (s.draft_token_ids.empty()) {
    sample_row(s, state, logits, generated, thread, out.emplace_back());
    return;
  }
  // Verification by sampling: row j's token is drawn exactly as a plain
  // decode step would draw it (same processing, same RNG draw, the accepted
  // tokens as context); draft j is accepted iff the two agree, and the first
  // disagreement is the correction token (after k agreements row k gives the
  // bonus token). For a point-mass draft this *is* rejection sampling: draft
  // d is accepted with probability p(d), and a rejected position's token is
  // distributed as p restricted to tokens != d, renormalised, which is
  // normalize(max(p - q, 0)) for q = the point mass on d. So the target
  // distribution is preserved exactly, greedy (p = argmax) included, and a
  // seeded request gives the same tokens with or without drafts.
  const int64_t vocab = model_.vocab_size();
  std::vector<int32_t> context(generated.begin(), generated.end());
  for (int64_t j = 0; j <= s.num_draft_tokens(); ++j) {
    SampledToken& t = out.emplace_back();
    sample_row(s, state, logits + j * vocab, context, thread, t);
    if (j == s.num_draft_tokens() || t.token_id != s.draft_token_ids[j]) return;
    context.push_back(t.token_id);
  }
}

void ModelRunner::prompt_logprob_row(const scheduler::ScheduledRequest& s, RequestState& state,
                                     int64_t position, const float* logits,
                                     std::vector<PromptLogprob>& out) {
  const int64_t vocab = model_.vocab_size();
  PromptLogprob p;
  p.token_id = s.request->all_token_ids()[position + 1];
  sampling::TokenLogprobs lp =
      sampling::token_logprobs(logits, vocab, p.token_id, state.num_prompt_logprobs);
  p.logprob = lp.logprob;
  p.top_logprobs = std::move(lp.top);
  out.push_back(std::move(p));
  state.num_prompt_logprobs_done = position + 1;
}

void ModelRunner::process_entry(const scheduler::SchedulerOutput& output,
                                const std::vector<LogitsRow>& rows, const EntryRows& entry,
                                const float* logits, int thread, StepResult& result) {
  const int64_t vocab = model_.vocab_size();
  const size_t e = rows[entry.begin].entry;
  const scheduler::ScheduledRequest& s = output.scheduled[e];
  for (size_t r = entry.begin; r < entry.end; ++r) {
    const float* l = logits + r * vocab;
    if (rows[r].samples) {
      // The entry's sampling rows are consecutive: all of them are read here.
      sample_verified(s, *entry.state, l, thread, result.tokens[e]);
      r += static_cast<size_t>(s.num_draft_tokens());
    } else {
      prompt_logprob_row(s, *entry.state, rows[r].position, l, result.prompt_logprobs[e]);
    }
  }
}

StepResult ModelRunner::execute(const scheduler::SchedulerOutput& output,
                                const kv::KvCacheManager& kv) {
  StepResult result;
  result.tokens.resize(output.scheduled.size());
  result.prompt_logprobs.resize(output.scheduled.size());
  if (output.scheduled.empty()) return result;
  std::vector<LogitsRow> rows;
  model::ForwardBatch batch = build_batch(output, kv, rows);
  const int64_t vocab = model_.vocab_size();
  std::vector<float> logits(batch.logits_indices.size() * vocab);
  model_.forward(batch, *kv_memory_, workspace_, logits.data(), backend_);
  num_forward_tokens_ += static_cast<int64_t>(batch.token_ids.size());

  std::vector<EntryRows> entries;
  for (size_t r = 0; r < rows.size();) {
    size_t end = r + 1;
    while (end < rows.size() && rows[end].entry == rows[r].entry) ++end;
    auto it = requests_.find(output.scheduled[rows[r].entry].request->key());
    STRATA_CHECK(it != requests_.end()) << "request was never added to the runner";
    entries.push_back({r, end, &it->second});
    r = end;
  }
  // Entries touch only their own request state and result slots, so they
  // can run on any thread in any order; rows within an entry stay in order.
  auto run = [&](int64_t begin, int64_t end, int thread) {
    for (int64_t e = begin; e < end; ++e) {
      process_entry(output, rows, entries[static_cast<size_t>(e)], logits.data(), thread, result);
    }
  };
  const int64_t num_entries = static_cast<int64_t>(entries.size());
  if (sampling_pool_ != nullptr && num_entries > 1) {
    sampling_pool_->parallel_for(num_entries, run);
  } else {
    run(0, num_entries, 0);
  }
  return result;
}

}  // namespace strata::runner
