#include "engine/engine_core.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/request_limits.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::engine {
namespace {

int64_t num_blocks_for(const model::Model& model, const EngineConfig& config) {
  if (config.num_blocks > 0) return config.num_blocks;
  return config.kv_cache_memory_bytes /
         model.kv_bytes_per_block(config.block_size, config.kv_cache_dtype);
}

scheduler::StopConditions to_scheduler(StopConditions s) {
  return {.max_tokens = s.max_tokens,
          .min_tokens = s.min_tokens,
          .stop_token_ids = std::move(s.stop_token_ids),
          .eos_token_ids = std::move(s.eos_token_ids),
          .ignore_eos = s.ignore_eos};
}

scheduler::KvTransferHints to_scheduler(KvTransferHints h) {
  return {.remote_host = std::move(h.remote_host),
          .remote_port = h.remote_port,
          .max_load_tokens = h.max_load_tokens,
          .max_offload_tokens = h.max_offload_tokens,
          .do_remote_decode = h.do_remote_decode};
}

// The runner's mask, with the request's stop tokens: once a grammar is
// complete only they remain.
runner::TokenConstraintSpec to_runner(TokenConstraints c, const StopConditions& stop) {
  runner::TokenConstraintSpec spec{.grammar = std::move(c.grammar),
                                   .grammar_starts_after = std::move(c.grammar_starts_after),
                                   .allowed_token_ids = std::move(c.allowed_token_ids),
                                   .bad_words = std::move(c.bad_words),
                                   .stop_token_ids = {}};
  if (spec.empty()) return spec;
  spec.stop_token_ids = stop.eos_token_ids;
  spec.stop_token_ids.insert(spec.stop_token_ids.end(), stop.stop_token_ids.begin(),
                             stop.stop_token_ids.end());
  return spec;
}

SampledToken to_engine(runner::SampledToken t) {
  return {t.token_id, t.logprob, std::move(t.top_logprobs)};
}

PromptLogprob to_engine(runner::PromptLogprob p) {
  return {p.token_id, p.logprob, std::move(p.top_logprobs)};
}

std::optional<KvTransferParams> to_engine(const std::optional<scheduler::KvTransferParams>& p) {
  if (!p) return std::nullopt;
  return KvTransferParams{p->do_remote_prefill, p->do_remote_decode, p->remote_host,
                          p->remote_port};
}

FinishReason to_engine(scheduler::RequestStatus status) {
  switch (status) {
    case scheduler::RequestStatus::kFinishedStopped: return FinishReason::kStop;
    case scheduler::RequestStatus::kFinishedLength: return FinishReason::kLength;
    case scheduler::RequestStatus::kFinishedAborted: return FinishReason::kAbort;
    default: return FinishReason::kNone;
  }
}

scheduler::RequestStatus to_scheduler(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return scheduler::RequestStatus::kFinishedStopped;
    case FinishReason::kLength: return scheduler::RequestStatus::kFinishedLength;
    default: return scheduler::RequestStatus::kFinishedAborted;
  }
}

}  // namespace

std::string model_fingerprint(const model::Model& model) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  const model::ModelConfig& c = model.config();
  const int64_t shape[] = {static_cast<int64_t>(c.arch), c.vocab_size, c.hidden_size,
                           c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
                           c.num_key_value_heads, c.head_dim, c.sliding_window,
                           static_cast<int64_t>(c.rope_style)};
  XXH3_128bits_update(state, shape, sizeof(shape));
  XXH3_128bits_update(state, &c.rope_theta, sizeof(c.rope_theta));
  const model::WeightSource& w = model.files().weights;
  for (const std::string& name : w.names()) {
    const tensor::TensorView& v = w.find(name)->view;
    XXH3_128bits_update(state, name.data(), name.size());
    const char* dtype = tensor::dtype_name(v.dtype);
    XXH3_128bits_update(state, dtype, std::strlen(dtype));
    const int64_t bytes = v.size_bytes();
    const int64_t head = std::min<int64_t>(bytes, 4096);
    const auto* data = static_cast<const uint8_t*>(v.data);
    XXH3_128bits_update(state, data, head);
    XXH3_128bits_update(state, data + bytes - head, head);
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

StatusOr<std::unique_ptr<EngineCore>> EngineCore::create(const model::Model& model,
                                                         const EngineConfig& config,
                                                         ThreadPool& pool) {
  const int64_t num_blocks = num_blocks_for(model, config);
  const int64_t needed = (config.scheduler.max_model_len + config.block_size - 1) / config.block_size;
  if (num_blocks < needed) {
    return invalid_argument(
        "the KV cache has room for " + std::to_string(num_blocks * config.block_size) +
        " tokens but --max-model-len is " + std::to_string(config.scheduler.max_model_len) +
        "; raise --kv-cache-memory (one token needs " +
        std::to_string(model.kv_bytes_per_block(1, config.kv_cache_dtype)) +
        " bytes) or lower --max-model-len");
  }
  if (config.speculative.method == spec_decode::SpeculativeMethod::kDraftModel) {
    if (config.draft_model == nullptr) {
      return invalid_argument("speculative method draft_model needs its model (\"" +
                              config.speculative.model + "\") loaded; none was given");
    }
    if (config.draft_model->vocab_size() != model.vocab_size()) {
      return invalid_argument(
          "--speculative-config: the draft model " + config.speculative.model + " has a vocabulary of " +
          std::to_string(config.draft_model->vocab_size()) + " tokens but the target has " +
          std::to_string(model.vocab_size()) +
          "; a draft model must share the target's tokenizer and vocabulary");
    }
  }
  std::unique_ptr<EngineCore> core(new EngineCore(model, config, num_blocks, pool));
  if (config.speculative.method == spec_decode::SpeculativeMethod::kDraftModel) {
    const int64_t draft_blocks = config.draft_num_blocks > 0 ? config.draft_num_blocks : num_blocks;
    core->draft_ = std::make_unique<runner::DraftModelProposer>(
        *config.draft_model, *core->backend_, draft_blocks, config.block_size,
        config.kv_cache_dtype);
  }
  if (config.offload.enabled) {
    const model::ModelConfig& c = model.config();
    offload::ChunkFormat format;
    format.model_fingerprint = core->extra_keys_.model_fingerprint;
    format.kv_dtype = config.kv_cache_dtype;
    format.num_layers = c.num_hidden_layers;
    format.num_kv_heads = c.num_key_value_heads;
    format.head_dim = c.head_dim;
    format.block_size = config.block_size;
    format.blocks_per_chunk = config.offload.blocks_per_chunk;
    STRATA_ASSIGN_OR_RETURN(core->connector_,
                            offload::OffloadingConnector::create(config.offload, format, core->kv_,
                                                                 core->kv_memory_,
                                                                 core->backend_));
    core->scheduler_.set_connector(core->connector_.get());
  }
  core->enable_kv_events();
  return core;
}

void EngineCore::enable_kv_events() {
  if (config_.kv_events == nullptr || !config_.kv_events->is_enabled()) return;
  kv_.pool().enable_events(true);
  if (connector_ != nullptr) connector_->enable_events(true);
}

void EngineCore::publish_kv_events() {
  if (!kv_.pool().events_enabled()) return;
  std::vector<events::KvEvent> batch;
  auto hashes = [](const std::vector<kv::BlockHash>& in) {
    std::vector<uint64_t> out;
    for (const kv::BlockHash& h : in) out.push_back(events::to_event_hash(h));
    return out;
  };
  for (kv::KvCacheEvent& e : kv_.pool().take_events()) {
    switch (e.kind) {
      case kv::KvCacheEvent::Kind::kStored: {
        events::BlockStored stored;
        stored.block_hashes = hashes(e.block_hashes);
        if (e.parent_block_hash) stored.parent_block_hash = events::to_event_hash(*e.parent_block_hash);
        stored.token_ids = std::move(e.token_ids);
        stored.block_size = config_.block_size;
        stored.medium = events::kMediumGpu;  // vLLM's name for the engine's KV pool
        batch.push_back(std::move(stored));
        break;
      }
      case kv::KvCacheEvent::Kind::kRemoved:
        batch.push_back(events::BlockRemoved{hashes(e.block_hashes), events::kMediumGpu, ""});
        break;
      case kv::KvCacheEvent::Kind::kAllCleared:
        batch.push_back(events::AllBlocksCleared{});
        break;
    }
  }
  if (connector_ != nullptr) {
    const int64_t chunk_tokens = connector_->format().tokens_per_chunk();
    for (offload::OffloadEvent& e : connector_->take_events()) {
      if (e.removed) {
        batch.push_back(events::BlockRemoved{hashes(e.keys), e.medium, e.locality});
      } else {
        events::BlockStored stored;  // tiers announce hashes only, as vLLM's offload tiers do
        stored.block_hashes = hashes(e.keys);
        stored.block_size = chunk_tokens;
        stored.medium = e.medium;
        stored.locality = e.locality;
        batch.push_back(std::move(stored));
      }
    }
  }
  if (!batch.empty()) config_.kv_events->publish(std::move(batch));
}

bool EngineCore::reset_prefix_cache() {
  if (!kv_.pool().reset_prefix_cache()) return false;
  if (connector_ != nullptr) connector_->reset_host_tier();
  publish_kv_events();
  return true;
}

void EngineCore::wait_for_offload() {
  if (connector_ == nullptr) return;
  for (const offload::FinishedLoad& load : connector_->drain()) {
    scheduler_.finish_kv_load(load.request_id, load.num_tokens);
  }
}

EngineCore::EngineCore(const model::Model& model, const EngineConfig& config, int64_t num_blocks,
                       ThreadPool& pool)
    : model_(model),
      config_(config),
      kv_(static_cast<int32_t>(num_blocks), static_cast<int32_t>(config.block_size),
          config.enable_prefix_caching),
      scheduler_(config.scheduler, kv_),
      backend_(std::make_shared<backend::CpuBackend>(pool)),
      kv_memory_(model.make_kv_memory(*backend_, num_blocks, config.block_size,
                                      config.kv_cache_dtype)),
      runner_(model, kv_memory_, *backend_, &pool) {
  extra_keys_.model_fingerprint = engine::model_fingerprint(model);
  extra_keys_.kv_dtype = tensor::kv_cache_dtype_name(config.kv_cache_dtype);
}

Status EngineCore::add_request(EngineRequest request) {
  // The same limits Engine checks on its callers' threads (request_limits.h).
  STRATA_RETURN_IF_ERROR(validate_request(
      RequestLimits::of(config_, model_.vocab_size(), kv_.pool().num_blocks()), request));
  kv::ExtraKeys keys = extra_keys_;
  keys.cache_salt = request.cache_salt;
  const kv::RequestKey key = next_key_++;
  runner::TokenConstraintSpec constraints = to_runner(std::move(request.constraints), request.stop);
  auto r = std::make_unique<scheduler::Request>(
      request.request_id, key, std::move(request.prompt_token_ids),
      to_scheduler(std::move(request.stop)), kv::root_block_hash(keys), config_.block_size);
  r->skip_prefix_cache = request.num_prompt_logprobs >= 0;
  r->kv_transfer = to_scheduler(std::move(request.kv_transfer));
  STRATA_RETURN_IF_ERROR(scheduler_.add_request(std::move(r)));
  times_[request.request_id] = {.arrival = std::chrono::steady_clock::now()};
  runner_.add_request(key, request.sampling, request.num_top_logprobs,
                      request.num_prompt_logprobs, std::move(constraints));
  return Status();
}

bool EngineCore::finish_request(const std::string& request_id, FinishReason reason) {
  const scheduler::Request* r = scheduler_.find(request_id);
  if (r == nullptr) return false;
  if (!scheduler_.finish_request(request_id, to_scheduler(reason))) return false;
  pending_prompt_logprobs_.erase(request_id);  // times_: the final output reports them
  aborted_.push_back(output_for(*r));
  return true;
}

RequestOutput EngineCore::output_for(const scheduler::Request& r) const {
  RequestOutput out;
  out.request_id = r.request_id();
  out.finished = scheduler::is_finished(r.status);
  if (out.finished) {
    out.finish_reason = to_engine(r.status);
    out.kv_transfer_params = to_engine(r.kv_transfer_params);
  }
  out.num_prompt_tokens = r.num_prompt_tokens();
  out.num_cached_tokens = std::max<int64_t>(0, r.num_cached_tokens);
  out.num_output_tokens = r.num_output_tokens();
  return out;
}

std::vector<RequestOutput> EngineCore::step() {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  std::vector<RequestOutput> outputs;
  outputs.swap(aborted_);
  Clock::time_point t = Clock::now();
  if (connector_ != nullptr) {
    for (const offload::FinishedLoad& load : connector_->poll()) {
      scheduler_.finish_kv_load(load.request_id, load.num_tokens);
    }
    step_times_.kv_transfer_s += seconds_since(t);
    t = Clock::now();
  }
  scheduler::SchedulerOutput plan = scheduler_.schedule();
  for (kv::RequestKey key : plan.finished_request_keys) forget_request(key);
  step_times_.schedule_s += seconds_since(t);
  if (plan.scheduled.empty()) {
    scheduler_.release_finished();
    publish_kv_events();
    // Nothing to compute: only KV copies are pending; let them progress.
    if (connector_ != nullptr && has_unfinished_requests()) {
      connector_->wait_for_progress(std::chrono::milliseconds(2));
    }
    time_outputs(outputs);
    return outputs;
  }
  ++num_steps_;
  record_step(plan.total_num_scheduled_tokens);
  const Clock::time_point now = Clock::now();
  for (const scheduler::ScheduledRequest& s : plan.scheduled) {
    auto it = times_.find(s.request->request_id());
    if (it == times_.end() || it->second.is_scheduled) continue;
    it->second.is_scheduled = true;
    it->second.scheduled = now;
  }
  t = Clock::now();
  runner::StepResult step = runner_.execute(plan, kv_);
  step_times_.forward_s += seconds_since(t);
  // The forward pass is complete: its full chunks may be copied out now.
  if (connector_ != nullptr) {
    t = Clock::now();
    connector_->store_computed(plan);
    step_times_.kv_transfer_s += seconds_since(t);
  }
  t = Clock::now();
  std::vector<std::vector<int32_t>> ids(step.tokens.size());
  for (size_t i = 0; i < step.tokens.size(); ++i) {
    for (const runner::SampledToken& t : step.tokens[i]) ids[i].push_back(t.token_id);
    auto& lps = step.prompt_logprobs[i];
    if (lps.empty()) continue;
    auto& pending = pending_prompt_logprobs_[plan.scheduled[i].request->request_id()];
    for (runner::PromptLogprob& p : lps) pending.push_back(to_engine(std::move(p)));
  }
  std::vector<scheduler::RequestUpdate> updates = scheduler_.update_from_output(plan, ids);
  size_t next = 0;
  const bool speculates =
      config_.speculative.enabled() &&
      (config_.speculative.disable_by_batch_size <= 0 ||
       scheduler_.num_running() <= config_.speculative.disable_by_batch_size);
  for (const scheduler::RequestUpdate& u : updates) {
    while (plan.scheduled[next].request != u.request) ++next;
    if (plan.scheduled[next].num_draft_tokens() > 0) {
      record_verify(plan.scheduled[next], step.tokens[next].size());
    }
    if (speculates && !u.finished) propose_drafts(*u.request);
    RequestOutput out = output_for(*u.request);
    // The scheduler keeps a prefix of the list (tokens after a stop are dropped).
    std::vector<runner::SampledToken>& tokens = step.tokens[next];
    for (size_t i = 0; i < u.new_token_ids.size(); ++i) {
      out.new_tokens.push_back(to_engine(std::move(tokens[i])));
    }
    if (auto p = pending_prompt_logprobs_.find(out.request_id);
        p != pending_prompt_logprobs_.end()) {
      out.prompt_logprobs = std::move(p->second);
      pending_prompt_logprobs_.erase(p);
    }
    if (u.finished) forget_request(u.request->key());
    outputs.push_back(std::move(out));
  }
  propose_queued_drafts();
  scheduler_.release_finished();
  publish_kv_events();
  time_outputs(outputs);
  step_times_.update_s += seconds_since(t);
  return outputs;
}

void EngineCore::forget_request(kv::RequestKey key) {
  runner_.remove_request(key);
  drafters_.erase(key);
  if (draft_ != nullptr) draft_->remove_request(key);
}

void EngineCore::record_verify(const scheduler::ScheduledRequest& s, size_t num_sampled) {
  const int64_t k = s.num_draft_tokens();
  const int64_t accepted = static_cast<int64_t>(num_sampled) - 1;
  ++spec_stats_.num_drafts;
  spec_stats_.num_draft_tokens += k;
  spec_stats_.num_accepted_tokens += accepted;
  std::vector<int64_t>& per_pos = spec_stats_.num_accepted_tokens_per_pos;
  if (per_pos.size() < static_cast<size_t>(k)) per_pos.resize(static_cast<size_t>(k), 0);
  for (int64_t i = 0; i < accepted; ++i) ++per_pos[static_cast<size_t>(i)];
  auto it = drafters_.find(s.request->key());
  if (it != drafters_.end()) it->second.on_verified(k, accepted);
}

void EngineCore::propose_drafts(const scheduler::Request& r) {
  // k drafts can add k + 1 tokens: leave room for the last one.
  const int64_t room = std::min(config_.scheduler.max_model_len - r.num_tokens(),
                                r.stop().max_tokens - r.num_output_tokens()) -
                       1;
  if (room <= 0) return;
  auto it = drafters_.find(r.key());
  if (it == drafters_.end()) {
    it = drafters_.emplace(r.key(), spec_decode::DraftController(config_.speculative)).first;
  }
  if (draft_ != nullptr) {
    const int64_t k = it->second.next_draft_len(room);
    if (k > 0) draft_queue_.emplace_back(&r, k);
    return;
  }
  std::vector<int32_t> drafts = it->second.propose(r.all_token_ids(), room);
  if (!drafts.empty()) scheduler_.set_draft_token_ids(r.request_id(), std::move(drafts));
}

void EngineCore::propose_queued_drafts() {
  if (draft_queue_.empty()) return;
  std::vector<runner::DraftRequest> requests;
  for (const auto& [r, k] : draft_queue_) {
    requests.push_back({.key = r->key(), .tokens = r->all_token_ids(), .num_drafts = k});
  }
  std::vector<std::vector<int32_t>> drafts = draft_->propose(requests);
  for (size_t i = 0; i < drafts.size(); ++i) {
    if (drafts[i].empty()) continue;
    scheduler_.set_draft_token_ids(draft_queue_[i].first->request_id(), std::move(drafts[i]));
  }
  draft_queue_.clear();
}

void EngineCore::record_step(int64_t num_tokens) {
  const std::vector<int64_t>& bounds = iteration_token_buckets();
  if (iteration_tokens_counts_.empty()) iteration_tokens_counts_.assign(bounds.size() + 1, 0);
  size_t bucket = 0;
  while (bucket < bounds.size() && num_tokens > bounds[bucket]) ++bucket;
  ++iteration_tokens_counts_[bucket];
  iteration_tokens_sum_ += num_tokens;
}

// Stamps queue / prefill time on each request's first output with a token,
// decode / inference time on its final output, and forgets finished requests.
void EngineCore::time_outputs(std::vector<RequestOutput>& outputs) {
  const auto now = std::chrono::steady_clock::now();
  auto seconds = [](auto from, auto to) { return std::chrono::duration<double>(to - from).count(); };
  for (RequestOutput& out : outputs) {
    auto it = times_.find(out.request_id);
    if (it == times_.end()) continue;
    RequestTimes& r = it->second;
    const bool has_token = !out.new_tokens.empty() && out.new_tokens.front().token_id >= 0;
    if (r.is_scheduled && !r.reported_start) {
      r.reported_start = true;
      out.queue_time_s = seconds(r.arrival, r.scheduled);
    }
    if (has_token && !r.has_first_token) {
      r.has_first_token = true;
      r.first_token = now;
      out.prefill_time_s = seconds(r.scheduled, now);
    }
    if (!out.finished) continue;
    if (r.has_first_token) {
      out.decode_time_s = seconds(r.first_token, now);
      out.inference_time_s = seconds(r.scheduled, now);
    }
    times_.erase(it);
  }
}

EngineStats EngineCore::stats() const {
  EngineStats s;
  s.num_steps = num_steps_;
  s.iteration_tokens_counts = iteration_tokens_counts_;
  if (s.iteration_tokens_counts.empty()) {
    s.iteration_tokens_counts.assign(iteration_token_buckets().size() + 1, 0);
  }
  s.iteration_tokens_sum = iteration_tokens_sum_;
  s.step_times = step_times_;
  s.num_forward_tokens = runner_.num_forward_tokens();
  s.expert_load = runner_.expert_load();
  s.num_prompt_tokens_computed = scheduler_.stats().num_prompt_tokens_computed;
  s.num_generation_tokens = scheduler_.stats().num_generation_tokens;
  s.num_preemptions = scheduler_.stats().num_preemptions;
  const kv::PrefixCacheStats& p = kv_.pool().stats();
  s.prefix_cache_queries = p.num_queries_tokens;
  s.prefix_cache_hits = p.num_hit_tokens;
  s.num_running = scheduler_.num_running();
  s.num_waiting = scheduler_.num_waiting();
  s.kv_cache_usage = kv_.pool().usage();
  const scheduler::SchedulerStats& ss = scheduler_.stats();
  s.external_prefix_cache_queries = ss.external_queries_tokens;
  s.external_prefix_cache_hits = ss.external_hit_tokens;
  s.prompt_tokens_local_compute = ss.prompt_tokens_local_compute;
  s.prompt_tokens_local_cache_hit = ss.prompt_tokens_local_cache_hit;
  s.prompt_tokens_external = ss.prompt_tokens_external;
  if (connector_ != nullptr) {
    s.offload_enabled = true;
    s.offload = connector_->stats();
  }
  s.spec_decode_enabled = config_.speculative.enabled();
  s.spec_decode = spec_stats_;
  s.spec_decode.num_accepted_tokens_per_pos.resize(
      static_cast<size_t>(std::max<int64_t>(config_.speculative.num_speculative_tokens, 0)), 0);
  return s;
}

}  // namespace strata::engine
