#include "scheduler/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace strata::scheduler {

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheManager& kv)
    : config_(config), kv_(kv) {
  STRATA_CHECK(config_.max_num_batched_tokens > 0 && config_.max_num_seqs > 0);
}

Status Scheduler::add_request(std::unique_ptr<Request> request) {
  const int64_t n = request->num_prompt_tokens();
  if (n == 0) return invalid_argument("the prompt is empty");
  if (n > config_.max_model_len) {
    return invalid_argument("prompt has " + std::to_string(n) + " tokens; --max-model-len is " +
                            std::to_string(config_.max_model_len));
  }
  const int64_t capacity = int64_t{kv_.pool().num_blocks()} * kv_.block_size();
  if (n + 1 > capacity) {
    return invalid_argument("prompt has " + std::to_string(n) + " tokens; the KV cache holds " +
                            std::to_string(capacity) + " tokens; raise --kv-cache-memory");
  }
  if (!config_.enable_chunked_prefill && n > config_.max_num_batched_tokens) {
    return invalid_argument("prompt has " + std::to_string(n) +
                            " tokens; --max-num-batched-tokens is " +
                            std::to_string(config_.max_num_batched_tokens) +
                            " and chunked prefill is off");
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
    bool allocated = false;
    while (!allocated) {
      allocated = kv_.allocate_slots(r->key(), r->num_computed_tokens, n, {}, r->block_hashes());
      if (allocated) break;
      Request* victim = running_.back();
      running_.pop_back();
      preempt(victim, out);
      if (victim == r) break;
    }
    if (!allocated) break;  // r itself was preempted; everything after it too
    out.scheduled.push_back({r, r->num_computed_tokens, n, r->num_computed_tokens + n == r->num_tokens()});
    budget -= n;
    ++i;
  }
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int64_t& budget) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    Request* r = waiting_.front();
    kv::ComputedBlocks hit;
    if (!r->skip_prefix_cache) hit = kv_.get_computed_blocks(r->block_hashes(), r->num_tokens());
    const int64_t num_computed = hit.num_computed_tokens;
    const int64_t remaining = r->num_tokens() - num_computed;
    if (!config_.enable_chunked_prefill && remaining > budget) break;
    const int64_t n = chunk_size(*r, num_computed, budget);
    if (!kv_.allocate_slots(r->key(), num_computed, n, hit, r->block_hashes())) break;
    waiting_.pop_front();
    running_.push_back(r);
    r->status = RequestStatus::kRunning;
    r->num_computed_tokens = num_computed;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = num_computed;
    out.scheduled.push_back({r, num_computed, n, num_computed + n == r->num_tokens()});
    budget -= n;
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  out.finished_request_keys.swap(finished_keys_);
  int64_t budget = config_.max_num_batched_tokens;
  schedule_running(out, budget);
  if (out.preempted_request_ids.empty()) schedule_waiting(out, budget);
  for (ScheduledRequest& s : out.scheduled) {
    out.total_num_scheduled_tokens += s.num_new_tokens;
    const int64_t prompt_left = s.request->num_prompt_tokens() - s.num_computed_tokens;
    stats_.num_prompt_tokens_computed += std::clamp<int64_t>(prompt_left, 0, s.num_new_tokens);
    s.request->num_computed_tokens += s.num_new_tokens;
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

std::vector<RequestUpdate> Scheduler::update_from_output(const SchedulerOutput& output,
                                                         const std::vector<int32_t>& sampled) {
  STRATA_CHECK(sampled.size() == output.scheduled.size());
  std::vector<RequestUpdate> updates;
  for (size_t i = 0; i < output.scheduled.size(); ++i) {
    const ScheduledRequest& s = output.scheduled[i];
    Request* r = s.request;
    // A request finished by the client during the step produces nothing.
    if (!s.samples || r->status != RequestStatus::kRunning) continue;
    r->append_output_token(sampled[i]);
    ++stats_.num_generation_tokens;
    bool done = check_stop(*r, sampled[i]);
    updates.push_back({r, sampled[i], done});
  }
  return updates;
}

void Scheduler::finish(Request* r, RequestStatus status) {
  if (r->status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), r));
  } else {
    auto it = std::find(waiting_.begin(), waiting_.end(), r);
    if (it != waiting_.end()) waiting_.erase(it);
  }
  kv_.free(r->key());
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
