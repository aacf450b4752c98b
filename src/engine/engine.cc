#include "engine/engine.h"

#include "base/cpu_features.h"
#include "base/log.h"

namespace strata::engine {

StatusOr<std::unique_ptr<Engine>> Engine::create(const model::Model& model,
                                                 const EngineConfig& config, int num_threads) {
  std::unique_ptr<Engine> engine(new Engine(model, config, num_threads));
  StatusOr<std::unique_ptr<EngineCore>> core = EngineCore::create(model, config, engine->pool_);
  if (!core.ok()) return core.status();
  engine->core_ = std::move(*core);
  engine->num_kv_blocks_ = engine->core_->num_kv_blocks();
  engine->num_draft_kv_blocks_ = engine->core_->num_draft_kv_blocks();
  engine->limits_ = RequestLimits::of(config, model.vocab_size(), engine->num_kv_blocks_);
  engine->thread_ = std::thread([e = engine.get()] { e->loop(); });
  return engine;
}

Engine::Engine(const model::Model& model, const EngineConfig& config, int num_threads)
    : model_(model),
      config_(config),
      pool_(num_threads > 0 ? num_threads : num_hardware_threads()) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Engine::add_request(EngineRequest request, OutputCallback on_output) {
  STRATA_RETURN_IF_ERROR(validate_request(limits_, request));
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back({std::move(request), std::move(on_output)});
  }
  wake_.notify_one();
  return Status();
}

void Engine::abort(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishes_.push_back({request_id, FinishReason::kAbort});
  }
  wake_.notify_one();
}

void Engine::finish_stopped(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishes_.push_back({request_id, FinishReason::kStop});
  }
  wake_.notify_one();
}

void Engine::reset_prefix_cache(ResetCallback done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      resets_.push_back(std::move(done));
      done = nullptr;
    }
  }
  if (done) return done(false);  // stopped: nothing will run it
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::drain_inbox() {
  std::vector<Pending> pending;
  std::vector<Finish> finishes;
  std::vector<ResetCallback> resets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(inbox_);
    finishes.swap(finishes_);
    resets.swap(resets_);
  }
  for (Pending& p : pending) {
    const std::string id = p.request.request_id;
    Status s = core_->add_request(std::move(p.request));
    if (!s.ok()) {
      // Lost a race with limits only the core knows (e.g. duplicate id).
      RequestOutput out;
      out.request_id = id;
      out.finished = true;
      out.finish_reason = FinishReason::kAbort;
      STRATA_LOG(kWarning) << "request " << id << " rejected: " << s.message();
      p.on_output(out);
      continue;
    }
    callbacks_[id] = std::move(p.on_output);
  }
  for (const Finish& f : finishes) core_->finish_request(f.request_id, f.reason);
  if (!resets.empty()) {
    const bool ok = core_->reset_prefix_cache();
    for (ResetCallback& done : resets) done(ok);
  }
}

void Engine::deliver(const std::vector<RequestOutput>& outputs) {
  for (const RequestOutput& out : outputs) {
    auto it = callbacks_.find(out.request_id);
    if (it == callbacks_.end()) continue;
    it->second(out);
    if (out.finished) callbacks_.erase(it);
  }
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] {
        return stop_ || !inbox_.empty() || !finishes_.empty() || !resets_.empty() ||
               core_->has_unfinished_requests();
      });
      if (stop_) break;
    }
    drain_inbox();
    std::vector<RequestOutput> outputs = core_->step();
    // Stats first, so a client woken by its last output sees them updated.
    EngineStats s = core_->stats();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_ = s;
    }
    deliver(outputs);
  }
  // Whoever still waits hears that their request ended, or that no reset ran.
  for (auto& [id, callback] : callbacks_) {
    RequestOutput out;
    out.request_id = id;
    out.finished = true;
    out.finish_reason = FinishReason::kAbort;
    callback(out);
  }
  std::vector<ResetCallback> resets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    resets.swap(resets_);
  }
  for (ResetCallback& done : resets) done(false);
  healthy_.store(false);
}

}  // namespace strata::engine
