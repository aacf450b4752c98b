#include "events/kv_event_publisher.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <future>
#include <string_view>

#include "base/log.h"

namespace strata::events {
namespace {

// vLLM's END_SEQ: -1 as 8 bytes, signed big-endian.
constexpr char kEndSeq[8] = {'\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff'};

// vLLM's rule: bind stable endpoints (wildcards, IPv6 "::", ipc, inproc),
// connect to anything else.
bool should_bind(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

bool is_ipv6(const std::string& endpoint) {
  return endpoint.find("::") != std::string::npos || endpoint.find('[') != std::string::npos;
}

int clamp_to_int(int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, 0, INT_MAX)); }

std::string seq_bytes(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(seq >> (56 - 8 * i));
  return out;
}

uint64_t read_seq(std::string_view bytes) {
  uint64_t seq = 0;
  for (char c : bytes) seq = (seq << 8) | static_cast<uint8_t>(c);
  return seq;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string zmq_error() { return zmq_strerror(zmq_errno()); }

// Sends `frames` as one multipart message; false (and errno set) on failure.
bool send_multipart(void* socket, std::initializer_list<std::string_view> frames) {
  size_t i = 0;
  for (std::string_view f : frames) {
    const int more = ++i < frames.size() ? ZMQ_SNDMORE : 0;
    if (zmq_send(socket, f.data(), f.size(), more | ZMQ_DONTWAIT) < 0) return false;
  }
  return true;
}

// Receives one whole multipart message without waiting; false when none is
// pending. Keeps at most kMaxFrames frames (the rest are read and dropped).
bool recv_multipart(void* socket, std::vector<std::string>& frames) {
  constexpr size_t kMaxFrames = 8;
  frames.clear();
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  bool more = true;
  while (more) {
    if (zmq_msg_recv(&msg, socket, frames.empty() ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&msg);
      return false;
    }
    if (frames.size() < kMaxFrames) {
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    }
    more = zmq_msg_more(&msg) != 0;
  }
  zmq_msg_close(&msg);
  return true;
}

}  // namespace

// The ZeroMQ context and sockets; created, used and closed on the publisher
// thread only.
struct KvEventPublisher::Sockets {
  void* ctx = nullptr;
  void* pub = nullptr;
  void* replay = nullptr;

  ~Sockets() {
    if (replay != nullptr) zmq_close(replay);
    if (pub != nullptr) zmq_close(pub);
    if (ctx != nullptr) zmq_ctx_term(ctx);  // waits up to the PUB linger for unsent messages
  }

  // Closes without waiting for unsent messages (failed startup).
  void abandon() {
    const int zero = 0;
    if (pub != nullptr) zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof(zero));
  }

  Status open(const KvEventsConfig& config, std::string& pub_endpoint,
              std::string& replay_endpoint) {
    ctx = zmq_ctx_new();
    if (ctx == nullptr) return internal_error("kv events: zmq_ctx_new failed: " + zmq_error());
    pub = zmq_socket(ctx, ZMQ_PUB);
    if (pub == nullptr)
      return internal_error("kv events: cannot create a PUB socket: " + zmq_error());
    const int hwm = clamp_to_int(config.hwm);
    const int linger = kShutdownLingerMs;
    zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof(linger));
    STRATA_RETURN_IF_ERROR(
        attach(pub, config.endpoint, should_bind(config.endpoint), "endpoint", pub_endpoint));
    if (config.replay_endpoint.empty()) return Status();

    replay = zmq_socket(ctx, ZMQ_ROUTER);
    if (replay == nullptr) {
      return internal_error("kv events: cannot create a ROUTER socket: " + zmq_error());
    }
    // One whole replay (buffer_steps batches and the end marker) must fit
    // under the ROUTER's high-water mark, or ZeroMQ drops its tail.
    const int replay_hwm = clamp_to_int(std::max<int64_t>(1000, config.buffer_steps + 2));
    const int zero = 0;
    zmq_setsockopt(replay, ZMQ_SNDHWM, &replay_hwm, sizeof(replay_hwm));
    zmq_setsockopt(replay, ZMQ_LINGER, &zero, sizeof(zero));
    return attach(replay, config.replay_endpoint, /*bind=*/true, "replay_endpoint",
                  replay_endpoint);
  }

 private:
  static Status attach(void* socket, const std::string& endpoint, bool bind, const char* key,
                       std::string& resolved) {
    if (is_ipv6(endpoint)) {
      const int one = 1;
      zmq_setsockopt(socket, ZMQ_IPV6, &one, sizeof(one));
    }
    const int rc =
        bind ? zmq_bind(socket, endpoint.c_str()) : zmq_connect(socket, endpoint.c_str());
    if (rc != 0) {
      const int err = zmq_errno();
      std::string message = std::string("kv events: cannot ") + (bind ? "bind" : "connect") +
                            " the " + key + " socket to \"" + endpoint + "\": " + zmq_strerror(err);
      if (err == EADDRINUSE) {
        message += " (another process holds that port; choose a free one for \"" +
                   std::string(key) + "\" in --kv-events-config)";
      }
      return unavailable(message);
    }
    resolved = endpoint;
    if (bind) {
      char buf[512];
      size_t size = sizeof(buf);
      if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, buf, &size) == 0 && size > 1) {
        resolved.assign(buf, size - 1);
      }
    }
    return Status();
  }
};

KvEventPublisher::KvEventPublisher(const KvEventsConfig& config) : config_(config) {}

StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::create(const KvEventsConfig& config) {
  return create_impl(config, /*paused=*/false);
}

StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::create_paused_for_testing(
    const KvEventsConfig& config) {
  return create_impl(config, /*paused=*/true);
}

StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::create_impl(
    const KvEventsConfig& config, bool paused) {
  std::unique_ptr<KvEventPublisher> publisher(new KvEventPublisher(config));
  if (!config.enable_kv_cache_events || config.publisher == "null") return publisher;
  if (config.publisher != "zmq") {
    return invalid_argument("kv events: publisher must be \"zmq\" or \"null\", got \"" +
                            config.publisher + "\"");
  }
  if (config.endpoint.empty()) return invalid_argument("kv events: endpoint is empty");
  if (config.max_queue_size < 1 || config.buffer_steps < 0 || config.hwm < 0) {
    return invalid_argument(
        "kv events: max_queue_size must be >= 1, buffer_steps and hwm >= 0; got " +
        std::to_string(config.max_queue_size) + ", " + std::to_string(config.buffer_steps) + ", " +
        std::to_string(config.hwm));
  }
  STRATA_RETURN_IF_ERROR(publisher->start(paused));
  return publisher;
}

Status KvEventPublisher::start(bool paused) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return internal_error(std::string("kv events: eventfd: ") + strerror(errno));
  paused_ = paused;
  std::promise<Status> ready;
  std::future<Status> ready_future = ready.get_future();
  thread_ = std::thread([this, ready = std::move(ready)]() mutable {
    Sockets sockets;
    Status status = sockets.open(config_, pub_endpoint_, replay_endpoint_);
    if (!status.ok()) sockets.abandon();
    const bool ok = status.ok();
    ready.set_value(std::move(status));
    if (ok) run(sockets);
  });
  Status status = ready_future.get();
  if (!status.ok()) {
    thread_.join();
    return status;
  }
  enabled_ = true;
  STRATA_LOG(kInfo) << describe();
  return Status();
}

std::string KvEventPublisher::describe() const {
  std::string line = "kv events: ";
  if (pub_binds()) {
    line += "PUB socket bound on " + pub_endpoint_ + " (subscribers connect to it)";
  } else {
    line += "PUB socket connects to " + pub_endpoint_ +
            " (a non-wildcard TCP endpoint connects, as in vLLM: the subscriber must bind "
            "that address; use tcp://*:PORT to bind here instead)";
  }
  if (!replay_endpoint_.empty()) line += ", replay bound on " + replay_endpoint_;
  return line + "; topic \"" + config_.topic + "\", " +
         (config_.event_encoding == EventEncoding::kMap ? "map" : "array") + " events";
}

bool KvEventPublisher::pub_binds() const { return should_bind(config_.endpoint); }

KvEventPublisher::~KvEventPublisher() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      paused_ = false;
    }
    wake();
    thread_.join();
  }
  if (wake_fd_ >= 0) close(wake_fd_);
}

void KvEventPublisher::wake() {
  const uint64_t one = 1;
  // Cannot fail short of counter overflow; the thread drains the counter.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void KvEventPublisher::resume_for_testing() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
  }
  if (enabled_) wake();
}

void KvEventPublisher::publish(std::vector<KvEvent> events) {
  if (!enabled_ || events.empty()) return;
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int64_t>(queue_.size()) >= config_.max_queue_size) {
      num_dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    was_empty = queue_.empty();
    // Stamped under the lock so timestamps never decrease along sequence numbers.
    queue_.push_back(Batch{now_seconds(), std::move(events)});
  }
  // The thread takes the whole queue on each wake, so only the first batch
  // into an empty queue needs to wake it.
  if (was_empty) wake();
}

void KvEventPublisher::run(Sockets& sockets) {
  for (;;) {
    zmq_pollitem_t items[2] = {};
    items[0].fd = wake_fd_;
    items[0].events = ZMQ_POLLIN;
    items[1].socket = sockets.replay;
    items[1].events = ZMQ_POLLIN;
    const int num_items = sockets.replay != nullptr ? 2 : 1;
    if (zmq_poll(items, num_items, -1) < 0) {
      if (zmq_errno() == EINTR) continue;
      STRATA_LOG(kError) << "kv events: zmq_poll: " << zmq_error();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (items[0].revents & ZMQ_POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof(count));
    }
    if (num_items == 2 && (items[1].revents & ZMQ_POLLIN)) serve_replay(sockets);

    std::deque<Batch> batches;
    bool stop = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop = stopping_;
      if (!paused_) batches.swap(queue_);
    }
    for (Batch& batch : batches) send_batch(sockets, batch);
    if (stop) return;
  }
}

void KvEventPublisher::send_batch(Sockets& sockets, Batch& batch) {
  std::string payload = encode_event_batch(batch.ts, batch.events, config_.event_encoding);
  const uint64_t seq = next_seq_++;
  const std::string seq_frame = seq_bytes(seq);
  if (!send_multipart(sockets.pub, {config_.topic, seq_frame, payload})) {
    STRATA_LOG(kWarning) << "kv events: sending batch " << seq << " failed: " << zmq_error();
  }
  num_published_.store(static_cast<int64_t>(next_seq_), std::memory_order_relaxed);
  if (sockets.replay == nullptr || config_.buffer_steps == 0) return;
  replay_buffer_.emplace_back(seq, std::move(payload));
  if (static_cast<int64_t>(replay_buffer_.size()) > config_.buffer_steps)
    replay_buffer_.pop_front();
}

void KvEventPublisher::serve_replay(Sockets& sockets) {
  std::vector<std::string> frames;
  while (recv_multipart(sockets.replay, frames)) {
    // [identity, "", start_seq] from REQ (or a DEALER sending the delimiter),
    // [identity, start_seq] from a bare DEALER.
    const bool delimited = frames.size() == 3 && frames[1].empty();
    if ((!delimited && frames.size() != 2) || frames.back().size() != 8) {
      STRATA_LOG(kWarning) << "kv events: ignoring a replay request of " << frames.size()
                           << " frames; expected the start sequence number as 8 bytes big-endian";
      continue;
    }
    const std::string& identity = frames[0];
    const std::string_view delimiter = "";
    const uint64_t start_seq = read_seq(frames.back());
    bool ok = true;
    for (const auto& [seq, payload] : replay_buffer_) {
      if (seq < start_seq) continue;
      const std::string seq_frame = seq_bytes(seq);
      ok = delimited ? send_multipart(sockets.replay, {identity, delimiter, seq_frame, payload})
                     : send_multipart(sockets.replay, {identity, seq_frame, payload});
      if (!ok) break;
    }
    const std::string_view end(kEndSeq, sizeof(kEndSeq));
    if (ok) {
      ok = delimited ? send_multipart(sockets.replay, {identity, delimiter, end, ""})
                     : send_multipart(sockets.replay, {identity, end, ""});
    }
    if (!ok) {
      STRATA_LOG(kWarning) << "kv events: replay reply failed: " << zmq_error();
    }
  }
}

}  // namespace strata::events
