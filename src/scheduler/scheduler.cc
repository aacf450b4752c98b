#include "scheduler/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace strata::scheduler {

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheManager& kv, KvConnector* connector)
    : config_(config), kv_(kv), connector_(connector) {
  STRATA_CHECK(config_.max_num_batched_tokens > 0 && config_.max_num_seqs > 0);
}

Status Scheduler::add_request(std::unique_ptr<Request> request) {
  const int64_t n = request->num_prompt_tokens();
  if (n == 0) return invalid_argument("the prompt is empty");
  if (n > config_.max_model_len) {
    return invalid_argument("prompt has " + std::to_string(n) +
                            " tokens; the maximum model length is " +
                            std::to_string(config_.max_model_len));
  }
  const int64_t capacity = int64_t{kv_.pool().num_blocks()} * kv_.block_size();
  if (n + 1 > capacity) {
    return invalid_argument("prompt has " + std::to_string(n) + " tokens; the KV cache holds " +
                            std::to_string(capacity) + " tokens");
  }
  if (!config_.enable_chunked_prefill && n > config_.max_num_batched_tokens) {
    return invalid_argument(
        "prompt has " + std::to_string(n) + " tokens; a step computes at most " +
        std::to_string(config_.max_num_batched_tokens) + " tokens and chunked prefill is off");
  }
  if (requests_.count(request->request_id()) != 0) {
    return invalid_argument("request id '" + request->request_id() + "' is already in use");
  }
  Request* r = request.get();
  requests_.emplace(r->request_id(), std::move(request));
  waiting_.push_back(r);
  return Status();
}

int64_t Scheduler::chunk_size(const Request& r, int64_t num_computed, int64_t budget) const {
  int64_t n = std::min(r.num_tokens() - num_computed, budget);
  if (config_.long_prefill_token_threshold > 0) {
    n = std::min(n, config_.long_prefill_token_threshold);
  }
  return n;
}

int64_t Scheduler::num_drafts_to_verify(const Request& r, int64_t num_new, int64_t budget) const {
  // k drafts append up to k + 1 tokens: stay within max_model_len and max_tokens.
  const int64_t room =
      std::min(config_.max_model_len - r.num_tokens(), r.stop().max_tokens - r.num_output_tokens());
  const int64_t num_drafts = static_cast<int64_t>(r.draft_token_ids.size());
  const int64_t k = std::min({num_drafts, budget - num_new, room - 1});
  return std::max<int64_t>(k, 0);
}

void Scheduler::preempt(Request* victim, SchedulerOutput& out) {
  kv_.free(victim->key());
  victim->num_computed_tokens = 0;
  victim->status = RequestStatus::kPreempted;
  ++victim->num_preemptions;
  ++stats_.num_preemptions;
  waiting_.push_front(victim);
  out.preempted_request_ids.push_back(victim->request_id());
}

void Scheduler::schedule_running(SchedulerOutput& out, int64_t& budget) {
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Request* r = running_[i];
    const int64_t n = chunk_size(*r, r->num_computed_tokens, budget);
    const bool samples = r->num_computed_tokens + n == r->num_tokens();
    const int64_t num_drafts = samples ? num_drafts_to_verify(*r, n, budget) : 0;
    bool allocated = false;
    while (!allocated) {
      // Slots for the drafts too; block hashes cover only r's own tokens, so
      // no block holding a draft is cached here.
      allocated = kv_.allocate_slots(r->key(), r->num_computed_tokens, n + num_drafts, {},
                                     r->block_hashes(), r->all_token_ids());
      if (allocated) break;
      Request* victim = running_.back();
      running_.pop_back();
      preempt(victim, out);
      if (victim == r) break;
    }
    if (!allocated) break;  // r itself was preempted; everything after it too
    ScheduledRequest& s =
        out.scheduled.emplace_back(ScheduledRequest{r, r->num_computed_tokens, n, samples, {}});
    s.draft_token_ids.assign(r->draft_token_ids.begin(), r->draft_token_ids.begin() + num_drafts);
    r->draft_token_ids.clear();  // proposals are for one step
    budget -= s.num_scheduled_tokens();
    ++i;
  }
}

void Scheduler::record_first_schedule(Request* r, int64_t num_local_hit, int64_t num_external) {
  kv_.record_query(r->num_tokens(), num_local_hit);
  if (r->num_cached_tokens >= 0) return;  // resumed after preemption: counted once
  r->num_cached_tokens = num_local_hit + num_external;
  r->num_external_cached_tokens = num_external;
  stats_.prompt_tokens_local_cache_hit += num_local_hit;
  stats_.prompt_tokens_external += num_external;
  stats_.prompt_tokens_local_compute += r->num_prompt_tokens() - num_local_hit - num_external;
}

Scheduler::Admit Scheduler::admit(Request* r, SchedulerOutput& out, int64_t& budget,
                                  bool step_has_prefill) {
  if (r->status == RequestStatus::kWaitingForRemoteKvs) return Admit::kSkip;
  kv::ComputedBlocks hit;
  int64_t num_computed = 0;
  if (r->has_loaded_kv) {
    num_computed = r->num_computed_tokens;  // blocks already in its table
  } else {
    if (!r->skip_prefix_cache) hit = kv_.get_computed_blocks(r->block_hashes(), r->num_tokens());
    num_computed = hit.num_computed_tokens;
    if (connector_ != nullptr && !r->skip_prefix_cache) {
      std::optional<int64_t> external = connector_->get_num_new_matched_tokens(*r, num_computed);
      if (!external) return Admit::kSkip;  // a tier is promoting; ask next step
      if (*external > 0) {
        // Blocks for the whole sequence, not just the loaded part: a request
        // that waits holding half of what it needs could deadlock with others
        // doing the same, since waiting requests are never preempted. Only the
        // KV-pool hits are cacheable now; the loaded blocks become findable
        // when their copy is done (finish_kv_load).
        const auto pool_hashes = std::span(r->block_hashes()).first(hit.block_ids.size());
        if (!kv_.allocate_slots(r->key(), num_computed, r->num_tokens() - num_computed, hit,
                                pool_hashes)) {
          return Admit::kStop;
        }
        stats_.external_queries_tokens += r->num_tokens();
        stats_.external_hit_tokens += *external;
        record_first_schedule(r, num_computed, *external);
        r->num_computed_tokens = num_computed;
        r->status = RequestStatus::kWaitingForRemoteKvs;
        ++num_loading_;
        connector_->start_load(*r, kv_.block_ids(r->key()), num_computed, *external);
        return Admit::kLoading;
      }
    }
  }
  const int64_t remaining = r->num_tokens() - num_computed;
  if (!config_.enable_chunked_prefill && remaining > budget) return Admit::kStop;
  // Whole in a step of its own (chunk_size: the budget and long_prefill_token_threshold).
  const bool fits_a_step =
      chunk_size(*r, num_computed, config_.max_num_batched_tokens) == remaining;
  if (step_has_prefill && remaining > budget && fits_a_step) return Admit::kDefer;
  const int64_t n = chunk_size(*r, num_computed, budget);
  if (!kv_.allocate_slots(r->key(), num_computed, n, hit, r->block_hashes(), r->all_token_ids())) {
    return Admit::kStop;
  }
  if (!r->has_loaded_kv) {
    if (connector_ != nullptr && !r->skip_prefix_cache) stats_.external_queries_tokens += r->num_tokens();
    record_first_schedule(r, num_computed, 0);
  }
  r->has_loaded_kv = false;
  r->status = RequestStatus::kRunning;
  r->num_computed_tokens = num_computed;
  out.scheduled.push_back({r, num_computed, n, num_computed + n == r->num_tokens(), {}});
  budget -= n;
  return Admit::kScheduled;
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int64_t& budget) {
  size_t idx = 0;
  bool out_of_blocks = false;
  auto is_prefill = [](const ScheduledRequest& s) { return s.num_new_tokens > 1 || !s.samples; };
  bool step_has_prefill = std::any_of(out.scheduled.begin(), out.scheduled.end(), is_prefill);
  while (idx < waiting_.size() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    Request* r = waiting_[idx];
    // Past a request the pool cannot take, only requests whose KV a tier has
    // already loaded (they hold their blocks) may go ahead: blocking them
    // behind it would hold the pool hostage forever.
    if (out_of_blocks && !r->has_loaded_kv) {
      ++idx;
      continue;
    }
    const Admit result = admit(r, out, budget, step_has_prefill);
    if (result == Admit::kDefer) break;
    if (result == Admit::kStop) {
      if (connector_ == nullptr) break;
      out_of_blocks = true;
      ++idx;
      continue;
    }
    if (result == Admit::kSkip || result == Admit::kLoading) {
      ++idx;
      continue;
    }
    step_has_prefill = step_has_prefill || is_prefill(out.scheduled.back());
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(idx));
    running_.push_back(r);
  }
}

void Scheduler::finish_kv_load(const std::string& request_id, int64_t num_loaded_tokens) {
  --num_loading_;
  if (auto it = free_after_load_.find(request_id); it != free_after_load_.end()) {
    kv_.free(it->second);
    free_after_load_.erase(it);
    return;
  }
  auto it = requests_.find(request_id);
  STRATA_CHECK(it != requests_.end()) << "load finished for unknown request " << request_id;
  Request* r = it->second.get();
  STRATA_CHECK(r->status == RequestStatus::kWaitingForRemoteKvs);
  r->num_computed_tokens += num_loaded_tokens;
  kv_.cache_full_blocks(r->key(), r->block_hashes(), r->num_computed_tokens, r->all_token_ids());
  r->has_loaded_kv = true;
  r->status = RequestStatus::kWaiting;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  out.finished_request_keys.swap(finished_keys_);
  int64_t budget = config_.max_num_batched_tokens;
  schedule_running(out, budget);
  if (out.preempted_request_ids.empty()) schedule_waiting(out, budget);
  for (ScheduledRequest& s : out.scheduled) {
    out.total_num_scheduled_tokens += s.num_scheduled_tokens();
    const int64_t prompt_left = s.request->num_prompt_tokens() - s.num_computed_tokens;
    stats_.num_prompt_tokens_computed += std::clamp<int64_t>(prompt_left, 0, s.num_new_tokens);
    stats_.num_draft_tokens += s.num_draft_tokens();
    // Drafts count as computed until update_from_output rolls back the rejected.
    s.request->num_computed_tokens += s.num_scheduled_tokens();
  }
  return out;
}

bool Scheduler::check_stop(Request& r, int32_t token) {
  const StopConditions& stop = r.stop();
  if (r.num_output_tokens() >= stop.min_tokens) {
    auto contains = [token](const std::vector<int32_t>& ids) {
      return std::find(ids.begin(), ids.end(), token) != ids.end();
    };
    if ((!stop.ignore_eos && contains(stop.eos_token_ids)) || contains(stop.stop_token_ids)) {
      finish(&r, RequestStatus::kFinishedStopped);
      return true;
    }
  }
  if (r.num_output_tokens() >= stop.max_tokens || r.num_tokens() >= config_.max_model_len) {
    finish(&r, RequestStatus::kFinishedLength);
    return true;
  }
  return false;
}

std::vector<RequestUpdate> Scheduler::update_from_output(
    const SchedulerOutput& output, std::span<const std::vector<int32_t>> sampled_token_ids) {
  STRATA_CHECK(sampled_token_ids.size() == output.scheduled.size());
  std::vector<RequestUpdate> updates;
  for (size_t i = 0; i < output.scheduled.size(); ++i) {
    const ScheduledRequest& s = output.scheduled[i];
    Request* r = s.request;
    // A request finished by the client during the step produces nothing.
    if (!s.samples || r->status != RequestStatus::kRunning) continue;
    const std::vector<int32_t>& ids = sampled_token_ids[i];
    STRATA_CHECK(!ids.empty() && static_cast<int64_t>(ids.size()) <= s.num_draft_tokens() + 1)
        << "request " << r->request_id() << " verified " << s.num_draft_tokens()
        << " drafts and sampled " << ids.size() << " tokens";
    const int64_t num_accepted = static_cast<int64_t>(ids.size()) - 1;
    // Rejected drafts' KV slots are not computed: the next step rewrites them.
    r->num_computed_tokens -= s.num_draft_tokens() - num_accepted;
    stats_.num_accepted_tokens += num_accepted;
    r->draft_token_ids.clear();
    RequestUpdate& u = updates.emplace_back(RequestUpdate{r, {}, false});
    for (int32_t token : ids) {
      r->append_output_token(token);
      ++stats_.num_generation_tokens;
      u.new_token_ids.push_back(token);
      if (check_stop(*r, token)) {
        u.finished = true;  // the tokens after a stop are dropped
        break;
      }
    }
  }
  return updates;
}

bool Scheduler::set_draft_token_ids(const std::string& request_id,
                                    std::vector<int32_t> draft_token_ids) {
  auto it = requests_.find(request_id);
  if (it == requests_.end() || is_finished(it->second->status)) return false;
  it->second->draft_token_ids = std::move(draft_token_ids);
  return true;
}

void Scheduler::finish(Request* r, RequestStatus status) {
  if (r->status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), r));
  } else {
    auto it = std::find(waiting_.begin(), waiting_.end(), r);
    if (it != waiting_.end()) waiting_.erase(it);
  }
  if (r->status == RequestStatus::kWaitingForRemoteKvs) {
    free_after_load_.emplace(r->request_id(), r->key());  // the copy still writes its blocks
  } else {
    kv_.free(r->key());
  }
  if (connector_ != nullptr) r->kv_transfer_params = connector_->request_finished(*r);
  r->status = status;
  finished_.push_back(r);
  finished_keys_.push_back(r->key());
}

bool Scheduler::finish_request(const std::string& request_id, RequestStatus status) {
  auto it = requests_.find(request_id);
  if (it == requests_.end() || is_finished(it->second->status)) return false;
  finish(it->second.get(), status);
  return true;
}

void Scheduler::release_finished() {
  for (Request* r : finished_) requests_.erase(r->request_id());
  finished_.clear();
}

const Request* Scheduler::find(const std::string& request_id) const {
  auto it = requests_.find(request_id);
  return it == requests_.end() ? nullptr : it->second.get();
}

}  // namespace strata::scheduler
