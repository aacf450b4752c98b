// Publishes KV events over ZeroMQ exactly as vLLM's ZmqEventPublisher does, so
// KV-aware routers subscribe to Strata unchanged.
//
// Live stream: a PUB socket sends one 3-frame message per batch,
//   [topic, seq (u64 big-endian, 0, 1, 2, ...), payload (kv_event.h)].
// The endpoint binds when it contains "*", "::", "ipc://" or "inproc://" and
// connects otherwise (vLLM's rule); "tcp://127.0.0.1:*" binds a free port,
// reported by pub_endpoint().
//
// Replay: with a replay_endpoint, a ROUTER socket (always bound) keeps the
// last buffer_steps payloads. A client sends start_seq as 8 bytes big-endian,
// from a REQ socket or a DEALER that sends an empty delimiter frame first
// ([identity, "", start] at the ROUTER) or from a DEALER without it
// ([identity, start]). The publisher answers each buffered seq >= start_seq
// with [identity, "", seq (8 bytes), payload] (without "" for the second
// form), then the end marker [identity, "", END_SEQ = -1 as 8 bytes signed
// big-endian, ""] (vLLM's legacy replay protocol; its newer msgpack
// ZmqEventReplayRequest / snapshot protocol is not implemented).
//
// Threads: publish() and the counters may be called from any thread, also
// concurrently (batches take sequence numbers in the order publish() takes its
// lock); create() and the destructor from the owning thread, with no publish()
// racing the destructor. publish() never waits on I/O: it stamps the batch
// with the current time and appends it to a bounded queue under a short lock,
// dropping it (and counting the drop) when max_queue_size batches are already
// waiting. Encoding and every socket operation happen on the publisher's own
// thread.
//
// A dropped batch gets no sequence number, so subscribers cannot see the loss
// (vLLM blocks the engine instead); watch num_dropped().
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "events/kv_event.h"

namespace strata::events {

// vLLM's KVEventsConfig (--kv-events-config), plus event_encoding.
struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher = "null";  // "zmq" | "null"
  std::string endpoint = "tcp://*:5557";
  std::string replay_endpoint;  // "" = no replay socket
  std::string topic;
  int64_t buffer_steps = 10000;     // batches kept for replay
  int64_t hwm = 100000;             // PUB socket send high-water mark, in messages
  int64_t max_queue_size = 100000;  // batches waiting for the publisher thread
  EventEncoding event_encoding = EventEncoding::kArray;  // Strata: see kv_event.h
};

class KvEventPublisher {
 public:
  // Sets up the sockets (on the publisher thread) and returns once they are
  // bound or connected. With events disabled or publisher "null" the result
  // publishes nothing and starts no thread.
  static StatusOr<std::unique_ptr<KvEventPublisher>> create(const KvEventsConfig& config);

  // As create(), but the thread sends nothing until resume_for_testing(), so a
  // test can fill the queue deterministically.
  static StatusOr<std::unique_ptr<KvEventPublisher>> create_paused_for_testing(
      const KvEventsConfig& config);
  void resume_for_testing();

  // Sends what is queued (the PUB socket lingers up to kShutdownLingerMs for
  // slow subscribers), then closes the sockets and joins the thread.
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Enqueues one KVEventBatch stamped with the current time. An empty batch
  // is ignored.
  void publish(std::vector<KvEvent> events);

  bool is_enabled() const { return enabled_; }
  int64_t num_dropped() const { return num_dropped_.load(std::memory_order_relaxed); }
  // Batches sent on the PUB socket (= the next sequence number).
  int64_t num_published() const { return num_published_.load(std::memory_order_relaxed); }

  // The endpoints as bound (a "*" port resolved), or as configured when
  // connecting; "" when absent.
  const std::string& pub_endpoint() const { return pub_endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }
  // Whether the PUB socket binds (else it connects and the subscriber binds).
  bool pub_binds() const;
  // One line for the startup log: each endpoint, whether it binds or
  // connects (so a router operator knows which side must bind), the topic.
  std::string describe() const;

  static constexpr int kShutdownLingerMs = 1000;

 private:
  struct Batch {
    double ts = 0;
    std::vector<KvEvent> events;
  };
  struct Sockets;  // ZeroMQ context and sockets, touched only by the thread

  explicit KvEventPublisher(const KvEventsConfig& config);
  static StatusOr<std::unique_ptr<KvEventPublisher>> create_impl(const KvEventsConfig& config,
                                                                 bool paused);
  Status start(bool paused);
  void wake();
  void run(Sockets& sockets);
  void send_batch(Sockets& sockets, Batch& batch);
  void serve_replay(Sockets& sockets);

  const KvEventsConfig config_;
  bool enabled_ = false;
  std::string pub_endpoint_;
  std::string replay_endpoint_;
  int wake_fd_ = -1;  // eventfd: publish() and the destructor wake the thread

  std::mutex mu_;
  std::deque<Batch> queue_;  // guarded by mu_
  bool paused_ = false;      // guarded by mu_
  bool stopping_ = false;    // guarded by mu_

  std::atomic<int64_t> num_dropped_{0};
  std::atomic<int64_t> num_published_{0};

  // Publisher thread only.
  uint64_t next_seq_ = 0;
  std::deque<std::pair<uint64_t, std::string>> replay_buffer_;  // (seq, payload)

  std::thread thread_;
};

}  // namespace strata::events
