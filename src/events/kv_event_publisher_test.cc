#include "events/kv_event_publisher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace strata::events {
namespace {

KvEventsConfig loopback_config() {
  KvEventsConfig c;
  c.enable_kv_cache_events = true;
  c.publisher = "zmq";
  c.endpoint = "tcp://127.0.0.1:*";
  c.topic = "kv@test";
  return c;
}

std::vector<KvEvent> one_store(uint64_t hash) {
  BlockStored e;
  e.block_hashes = {hash};
  e.token_ids = {1, 2, 3, 4};
  e.block_size = 4;
  e.medium = kMediumGpu;
  return {e};
}

bool wait_for(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// A TCP listener on 127.0.0.1 holding a free port, closed on destruction.
class HeldPort {
 public:
  HeldPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~HeldPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Receives one multipart message (waiting up to 5 s); empty on timeout.
std::vector<std::string> recv_frames(void* socket) {
  zmq_pollitem_t item{socket, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, 5000) <= 0) return {};
  std::vector<std::string> frames;
  int more = 1;
  while (more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    EXPECT_GE(zmq_msg_recv(&msg, socket, 0), 0);
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return frames;
}

std::string be64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (56 - 8 * i));
  return out;
}

// The payload without its leading array header and float64 timestamp.
std::string without_ts(const std::string& payload) { return payload.substr(10); }

TEST(KvEventPublisher, DisabledOrNullPublishesNothing) {
  KvEventsConfig c = loopback_config();
  c.enable_kv_cache_events = false;
  auto p = KvEventPublisher::create(c);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE((*p)->is_enabled());
  (*p)->publish(one_store(1));
  EXPECT_EQ((*p)->num_published(), 0);
  EXPECT_EQ((*p)->num_dropped(), 0);
  EXPECT_EQ((*p)->pub_endpoint(), "");

  c = loopback_config();
  c.publisher = "null";
  auto q = KvEventPublisher::create(c);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE((*q)->is_enabled());
}

TEST(KvEventPublisher, RejectsAnUnknownPublisher) {
  KvEventsConfig c = loopback_config();
  c.publisher = "kafka";
  auto p = KvEventPublisher::create(c);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("\"kafka\""), std::string::npos);
}

TEST(KvEventPublisher, DropsAndCountsWhenTheQueueIsFull) {
  KvEventsConfig c = loopback_config();
  c.max_queue_size = 3;
  auto created = KvEventPublisher::create_paused_for_testing(c);
  ASSERT_TRUE(created.ok()) << created.status().message();
  KvEventPublisher& p = **created;
  for (uint64_t i = 0; i < 5; ++i) p.publish(one_store(i));
  p.publish({});  // empty batches are ignored, not queued
  EXPECT_EQ(p.num_dropped(), 2);
  EXPECT_EQ(p.num_published(), 0);
  p.resume_for_testing();
  EXPECT_TRUE(wait_for([&] { return p.num_published() == 3; }));
  p.publish(one_store(9));  // room again
  EXPECT_TRUE(wait_for([&] { return p.num_published() == 4; }));
  EXPECT_EQ(p.num_dropped(), 2);
}

TEST(KvEventPublisher, PublishFromManyThreads) {
  auto created = KvEventPublisher::create(loopback_config());
  ASSERT_TRUE(created.ok()) << created.status().message();
  KvEventPublisher& p = **created;
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&p, t] {
      for (uint64_t i = 0; i < 200; ++i) p.publish(one_store(t * 1000 + i));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(wait_for([&] { return p.num_published() == 800; })) << p.num_published();
  EXPECT_EQ(p.num_dropped(), 0);
}

TEST(KvEventPublisher, CreateFailsClearlyOnATakenPort) {
  HeldPort held;
  const std::string port = std::to_string(held.port());

  KvEventsConfig c = loopback_config();
  c.endpoint = "tcp://*:" + port;  // contains "*": binds, and the port is taken
  auto p = KvEventPublisher::create(c);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("cannot bind the endpoint socket to \"tcp://*:" + port +
                                      "\": Address already in use"),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("--kv-events-config"), std::string::npos);

  c = loopback_config();
  c.replay_endpoint = "tcp://127.0.0.1:" + port;  // the replay socket always binds
  auto q = KvEventPublisher::create(c);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("replay_endpoint"), std::string::npos)
      << q.status().message();
}

TEST(KvEventPublisher, ConnectsWhenTheEndpointHasNoWildcard) {
  // A SUB socket binds; the publisher connects to it (vLLM's "connect" side).
  void* ctx = zmq_ctx_new();
  void* sub = zmq_socket(ctx, ZMQ_SUB);
  ASSERT_EQ(zmq_bind(sub, "tcp://127.0.0.1:*"), 0);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
  char endpoint[256];
  size_t size = sizeof(endpoint);
  zmq_getsockopt(sub, ZMQ_LAST_ENDPOINT, endpoint, &size);

  KvEventsConfig c = loopback_config();
  c.endpoint = endpoint;
  {
    auto p = KvEventPublisher::create(c);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ((*p)->pub_endpoint(), endpoint);
    // The startup line tells the operator this side connects, so theirs must bind.
    EXPECT_FALSE((*p)->pub_binds());
    EXPECT_NE((*p)->describe().find(std::string("PUB socket connects to ") + endpoint),
              std::string::npos)
        << (*p)->describe();
    EXPECT_NE((*p)->describe().find("the subscriber must bind"), std::string::npos);
    // A bound SUB handles the new connection (and sends its subscription)
    // only while the application calls into it (libzmq issue #2267): poll it
    // while the publisher connects.
    zmq_pollitem_t item{sub, 0, ZMQ_POLLIN, 0};
    for (int i = 0; i < 30; ++i) zmq_poll(&item, 1, 10);
    (*p)->publish(one_store(42));
    const std::vector<std::string> frames = recv_frames(sub);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0], "kv@test");
    EXPECT_EQ(frames[1], be64(0));
    EXPECT_EQ(without_ts(frames[2]),
              without_ts(encode_event_batch(0, one_store(42), EventEncoding::kArray)));
  }
  zmq_close(sub);
  zmq_ctx_term(ctx);
}

TEST(KvEventPublisher, LiveStreamAndReplay) {
  KvEventsConfig c = loopback_config();
  c.replay_endpoint = "tcp://127.0.0.1:*";
  c.buffer_steps = 3;
  auto created = KvEventPublisher::create(c);
  ASSERT_TRUE(created.ok()) << created.status().message();
  KvEventPublisher& p = **created;
  EXPECT_TRUE(p.pub_binds());
  EXPECT_NE(p.describe().find("PUB socket bound on " + p.pub_endpoint() +
                              " (subscribers connect to it), replay bound on " +
                              p.replay_endpoint()),
            std::string::npos)
      << p.describe();

  void* ctx = zmq_ctx_new();
  void* sub = zmq_socket(ctx, ZMQ_SUB);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "kv@", 3);
  ASSERT_EQ(zmq_connect(sub, p.pub_endpoint().c_str()), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  std::vector<std::string> payloads;
  for (uint64_t i = 0; i < 5; ++i) {
    p.publish(one_store(100 + i));
    const std::vector<std::string> frames = recv_frames(sub);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[1], be64(i));
    EXPECT_EQ(without_ts(frames[2]),
              without_ts(encode_event_batch(0, one_store(100 + i), EventEncoding::kArray)));
    payloads.push_back(frames[2]);
  }

  // A DEALER with the empty delimiter (as REQ frames it): only the last
  // buffer_steps = 3 batches (2, 3, 4) are kept; ask from 3.
  void* dealer = zmq_socket(ctx, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(dealer, p.replay_endpoint().c_str()), 0);
  zmq_send(dealer, "", 0, ZMQ_SNDMORE);
  zmq_send(dealer, be64(3).data(), 8, 0);
  for (uint64_t seq : {3, 4}) {
    const std::vector<std::string> frames = recv_frames(dealer);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0], "");
    EXPECT_EQ(frames[1], be64(seq));
    EXPECT_EQ(frames[2], payloads[seq]);  // byte-identical to the live message
  }
  std::vector<std::string> end = recv_frames(dealer);
  ASSERT_EQ(end.size(), 3u);
  EXPECT_EQ(end[1], std::string(8, '\xff'));  // END_SEQ = -1
  EXPECT_EQ(end[2], "");

  // Without the delimiter, from 0: what is left of the buffer, then the end.
  zmq_send(dealer, be64(0).data(), 8, 0);
  for (uint64_t seq : {2, 3, 4}) {
    const std::vector<std::string> frames = recv_frames(dealer);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0], be64(seq));
    EXPECT_EQ(frames[1], payloads[seq]);
  }
  end = recv_frames(dealer);
  ASSERT_EQ(end.size(), 2u);
  EXPECT_EQ(end[0], std::string(8, '\xff'));

  // A malformed request is ignored; the socket keeps serving.
  zmq_send(dealer, "xyz", 3, 0);
  zmq_send(dealer, be64(5).data(), 8, 0);
  end = recv_frames(dealer);
  ASSERT_EQ(end.size(), 2u);
  EXPECT_EQ(end[0], std::string(8, '\xff'));

  zmq_close(dealer);
  zmq_close(sub);
  zmq_ctx_term(ctx);
}

}  // namespace
}  // namespace strata::events
