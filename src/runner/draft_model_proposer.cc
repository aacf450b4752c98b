#include "runner/draft_model_proposer.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "sampling/sampler.h"

namespace strata::runner {

DraftModelProposer::DraftModelProposer(const model::Model& model, backend::Backend& backend,
                                       int64_t num_blocks, int64_t block_size,
                                       tensor::KvCacheDtype kv_dtype)
    : model_(model),
      backend_(backend),
      kv_(model.make_kv_memory(backend, num_blocks, block_size, kv_dtype)),
      workspace_(model.make_workspace(backend)) {
  STRATA_CHECK(num_blocks >= 1);
  // Popped from the back: low block ids first.
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

void DraftModelProposer::remove_request(kv::RequestKey key) {
  auto it = sequences_.find(key);
  if (it == sequences_.end()) return;
  free_blocks_.insert(free_blocks_.end(), it->second.blocks.rbegin(), it->second.blocks.rend());
  sequences_.erase(it);
}

bool DraftModelProposer::prepare(Sequence& seq, std::span<const int32_t> tokens,
                                 int64_t num_positions) {
  const int64_t block_size = kv_->block_size();
  const size_t needed = static_cast<size_t>((num_positions + block_size - 1) / block_size);
  if (needed > seq.blocks.size() + free_blocks_.size()) return false;
  while (seq.blocks.size() < needed) {
    seq.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  // KV past the common prefix belongs to rejected drafts (or to nothing).
  const size_t n = std::min(seq.processed.size(), tokens.size());
  auto mismatch = std::mismatch(seq.processed.begin(), seq.processed.begin() + n, tokens.begin());
  size_t keep = static_cast<size_t>(mismatch.first - seq.processed.begin());
  // At least one token is fed, to get the logits after the last one.
  keep = std::min(keep, tokens.size() - 1);
  seq.processed.resize(keep);
  return true;
}

void DraftModelProposer::add_token(model::ForwardBatch& batch, const Sequence& seq,
                                   int32_t token_id, int64_t pos) const {
  const int64_t block_size = kv_->block_size();
  STRATA_DCHECK(pos / block_size < static_cast<int64_t>(seq.blocks.size()));
  batch.token_ids.push_back(token_id);
  batch.positions.push_back(static_cast<int32_t>(pos));
  batch.attn.slot_mapping.push_back(int64_t{seq.blocks[pos / block_size]} * block_size +
                                    pos % block_size);
}

std::vector<int32_t> DraftModelProposer::step(std::span<Active> active) {
  model::ForwardBatch batch;
  attention::AttentionMetadata& md = batch.attn;
  size_t max_blocks = 1;
  for (const Active& a : active) max_blocks = std::max(max_blocks, a.seq->blocks.size());
  md.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
  md.query_start_loc.push_back(0);
  for (Active& a : active) {
    const int64_t start = static_cast<int64_t>(a.seq->processed.size());
    for (size_t t = 0; t < a.pending.size(); ++t) {
      add_token(batch, *a.seq, a.pending[t], start + static_cast<int64_t>(t));
    }
    a.seq->processed.insert(a.seq->processed.end(), a.pending.begin(), a.pending.end());
    md.query_start_loc.push_back(static_cast<int32_t>(batch.token_ids.size()));
    md.seq_lens.push_back(static_cast<int32_t>(a.seq->processed.size()));
    std::vector<int32_t> row(a.seq->blocks);
    row.resize(max_blocks, 0);
    md.block_tables.insert(md.block_tables.end(), row.begin(), row.end());
    batch.logits_indices.push_back(md.query_start_loc.back() - 1);
  }
  const int64_t vocab = model_.vocab_size();
  logits_.resize(active.size() * static_cast<size_t>(vocab));
  model_.forward(batch, *kv_, workspace_, logits_.data(), backend_);
  num_forward_tokens_ += batch.num_tokens();
  std::vector<int32_t> next(active.size());
  for (size_t i = 0; i < active.size(); ++i) {
    next[i] = sampling::argmax(logits_.data() + i * static_cast<size_t>(vocab), vocab);
  }
  return next;
}

std::vector<std::vector<int32_t>> DraftModelProposer::propose(
    std::span<const DraftRequest> requests) {
  std::vector<std::vector<int32_t>> drafts(requests.size());
  const int64_t max_positions = model_.config().max_position_embeddings;
  std::vector<Active> active;
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    STRATA_CHECK(!r.tokens.empty());
    const int64_t len = static_cast<int64_t>(r.tokens.size());
    int64_t k = r.num_drafts;
    // The last draft is never fed back: len + k - 1 positions.
    if (max_positions > 0) k = std::min(k, max_positions - len + 1);
    if (k <= 0) continue;
    Sequence& seq = sequences_[r.key];
    if (!prepare(seq, r.tokens, len + k - 1)) {
      if (seq.blocks.empty()) sequences_.erase(r.key);
      continue;
    }
    // A long catch-up (the prompt, or tokens after skipped proposals) runs
    // alone in chunks, so the batched step below stays small.
    while (len - static_cast<int64_t>(seq.processed.size()) > kMaxChunkTokens) {
      const auto from = r.tokens.begin() + static_cast<std::ptrdiff_t>(seq.processed.size());
      Active chunk{i, &seq, k, std::vector<int32_t>(from, from + kMaxChunkTokens)};
      step(std::span<Active>(&chunk, 1));
    }
    const auto from = r.tokens.begin() + static_cast<std::ptrdiff_t>(seq.processed.size());
    active.push_back({i, &seq, k, std::vector<int32_t>(from, r.tokens.end())});
  }
  while (!active.empty()) {
    const std::vector<int32_t> next = step(active);
    std::vector<Active> still;
    for (size_t a = 0; a < active.size(); ++a) {
      std::vector<int32_t>& out = drafts[active[a].index];
      out.push_back(next[a]);
      if (static_cast<int64_t>(out.size()) == active[a].num_drafts) continue;
      active[a].pending = {next[a]};
      still.push_back(std::move(active[a]));
    }
    active = std::move(still);
  }
  return drafts;
}

}  // namespace strata::runner
