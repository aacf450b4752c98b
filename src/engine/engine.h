// The thread-safe front of the engine: any thread adds requests and aborts
// them; one engine thread owns the EngineCore and loops
//   drain inbox (adds, aborts) -> step() -> hand each request its outputs
// and sleeps when there is nothing to do. It never blocks on I/O.
//
// Outputs are delivered by calling the request's OutputCallback on the engine
// thread, once per step that produced something for it, the last call having
// finished == true. Callbacks must be quick and must not call back into the
// Engine synchronously with a lock held (post to your own thread instead).
//
// Calls that need the engine thread (add_request, abort, finish_stopped,
// reset_prefix_cache) are queued and applied at the next step boundary; none
// of them waits for it. Their answers come back through callbacks on the
// engine thread.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/request_limits.h"

namespace strata::engine {

using OutputCallback = std::function<void(const RequestOutput&)>;
// Whether the prefix cache was reset (false while requests hold blocks, or
// when the engine stopped first).
using ResetCallback = std::function<void(bool reset)>;

class Engine {
 public:
  // Starts the engine thread; `num_threads` compute threads (0 = all cores).
  static StatusOr<std::unique_ptr<Engine>> create(const model::Model& model,
                                                  const EngineConfig& config, int num_threads);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks what can be checked without the engine thread (limits(): prompt
  // length against max_model_len, the KV cache and the step budget; token
  // ids; max_tokens) and queues the request. Errors queue nothing and
  // never call `on_output`.
  Status add_request(EngineRequest request, OutputCallback on_output);

  // Finishes a request at the next step boundary, freeing its KV blocks:
  // reason "abort" (client gone) or "stop" (the server matched a stop string).
  // Unknown or finished ids are ignored. The callback gets a final output.
  void abort(const std::string& request_id);
  void finish_stopped(const std::string& request_id);

  // Queues a reset of every cached prefix (KV pool and host tier); at the
  // next step boundary it happens if no request holds blocks, and `done`
  // hears whether it did (on the engine thread, same rules as OutputCallback;
  // at once on the caller's thread if the engine has stopped).
  void reset_prefix_cache(ResetCallback done);

  EngineStats stats() const;        // snapshot after the last step
  bool is_healthy() const { return healthy_.load(); }
  const EngineConfig& config() const { return config_; }
  const model::Model& model() const { return model_; }
  int64_t num_kv_blocks() const { return num_kv_blocks_; }
  int64_t num_draft_kv_blocks() const { return num_draft_kv_blocks_; }  // 0: no draft model
  const RequestLimits& limits() const { return limits_; }  // fixed after create()

 private:
  Engine(const model::Model& model, const EngineConfig& config, int num_threads);
  void loop();
  void drain_inbox();
  void deliver(const std::vector<RequestOutput>& outputs);

  struct Pending {
    EngineRequest request;
    OutputCallback on_output;
  };
  struct Finish {
    std::string request_id;
    FinishReason reason;  // kStop or kAbort
  };

  const model::Model& model_;
  EngineConfig config_;
  ThreadPool pool_;
  std::unique_ptr<EngineCore> core_;
  int64_t num_kv_blocks_ = 0;
  int64_t num_draft_kv_blocks_ = 0;
  RequestLimits limits_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Pending> inbox_;
  std::vector<Finish> finishes_;
  std::vector<ResetCallback> resets_;
  EngineStats stats_;
  bool stop_ = false;

  std::unordered_map<std::string, OutputCallback> callbacks_;  // engine thread only
  std::atomic<bool> healthy_{true};
  std::thread thread_;
};

}  // namespace strata::engine
