#include "offload/tiers/p2p/p2p_tier.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "offload/tiers/p2p/p2p_protocol.h"
#include "offload/tiers/p2p/p2p_socket.h"
#include "offload/tiers/testing/tier_test_util.h"

namespace strata::offload {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::HostMemory;
using testing::run_job;
using testing::small_format;

constexpr char kSecret[] = "0123456789abcdef-test-secret";

ChunkKey key_of(uint64_t i) { return ChunkKey{0x1000 + i, 0xabc0000 + i}; }

P2pTierConfig tier_config(std::vector<std::string> peers = {}) {
  P2pTierConfig c;
  c.port = 0;
  c.peers = std::move(peers);
  c.secret = kSecret;
  c.num_threads = 2;
  c.connect_timeout_ms = 500;
  c.io_timeout_ms = 1000;
  c.miss_ttl_ms = 200;
  c.max_bytes = 1 << 20;
  return c;
}

std::unique_ptr<P2pTier> make_tier(const P2pTierConfig& config, HostMemory& memory,
                                   const ChunkFormat& format = small_format()) {
  StatusOr<std::unique_ptr<P2pTier>> tier = create_p2p_tier(config, format, memory.region);
  EXPECT_TRUE(tier.ok()) << tier.status().message();
  return tier.ok() ? std::move(tier).value() : nullptr;
}

std::string address_of(const P2pTier& tier) { return "127.0.0.1:" + std::to_string(tier.port()); }

TierLookupContext named(const P2pTier& tier) {
  return TierLookupContext{"req-1", "127.0.0.1", tier.port()};
}

// Asks until the answer is not kRetry (or the deadline passes: kRetry).
LookupResult settle(SecondaryTier& tier, const ChunkKey& key, const TierLookupContext& context = {},
                    milliseconds timeout = milliseconds(5000)) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const LookupResult r = tier.lookup_for(key, context);
    if (r != LookupResult::kRetry || Clock::now() > deadline) return r;
    std::this_thread::sleep_for(milliseconds(1));
  }
}

// Server-side counters move when the server thread gets to it.
template <typename Pred>
bool eventually(Pred pred, milliseconds timeout = milliseconds(2000)) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

std::vector<bool> all_ok(size_t n) { return std::vector<bool>(n, true); }

TEST(P2pTier, StoredOnALoadedOnBByteForByte) {
  HostMemory mem_a(small_format(), 4);
  HostMemory mem_b(small_format(), 4);
  auto a = make_tier(tier_config(), mem_a);
  ASSERT_NE(a, nullptr);
  auto b = make_tier(tier_config({address_of(*a)}), mem_b);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 3; ++i) mem_a.fill(i, 10 + i);
  TierJobResult stored = run_job(*a, false, 1, {key_of(0), key_of(1), key_of(2)}, {0, 1, 2});
  EXPECT_EQ(stored.ok, all_ok(3));
  EXPECT_EQ(stored.bytes, 3 * small_format().payload_bytes());

  // Unknown at first: B asks A (one LOOKUP for every key queued meanwhile).
  EXPECT_EQ(b->lookup(key_of(0)), LookupResult::kRetry);
  EXPECT_EQ(b->lookup(key_of(1)), LookupResult::kRetry);
  EXPECT_EQ(settle(*b, key_of(0)), LookupResult::kHit);
  EXPECT_EQ(settle(*b, key_of(1)), LookupResult::kHit);
  TierJobResult loaded = run_job(*b, true, 2, {key_of(1), key_of(0)}, {3, 2});
  EXPECT_EQ(loaded.ok, all_ok(2));
  EXPECT_TRUE(mem_b.holds(3, 11));
  EXPECT_TRUE(mem_b.holds(2, 10));

  const TierStats sb = b->stats();
  EXPECT_EQ(sb.tier, "p2p");
  EXPECT_EQ(sb.load_bytes, 2 * small_format().payload_bytes());
  EXPECT_EQ(sb.chunk_hits, 2);
  EXPECT_EQ(sb.load_failures, 0);
  EXPECT_EQ(sb.probe_failures, 0);
  const TierStats sa = a->stats();
  EXPECT_EQ(sa.num_chunks, 3);
  EXPECT_EQ(sa.used_bytes, 3 * (kHeaderBytes + small_format().payload_bytes()));
  EXPECT_EQ(sa.store_bytes, 3 * small_format().payload_bytes());
  EXPECT_TRUE(eventually([&] { return a->p2p_stats().server.chunks_served == 2; }));
  const P2pTierStats pa = a->p2p_stats();
  EXPECT_EQ(pa.server.auth_failures, 0);
  EXPECT_EQ(b->p2p_stats().client.connections_opened, pa.server.connections_accepted);
}

TEST(P2pTier, StoresAreSkippedWhenPresentAndEvictLeastRecentlyUsed) {
  const ChunkFormat format = small_format();
  HostMemory mem(format, 4);
  P2pTierConfig config = tier_config();
  config.max_bytes = 2 * (kHeaderBytes + format.payload_bytes());
  auto a = make_tier(config, mem);
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 3; ++i) mem.fill(i, i);
  EXPECT_EQ(run_job(*a, false, 1, {key_of(0), key_of(1)}, {0, 1}).ok, all_ok(2));
  EXPECT_EQ(run_job(*a, false, 2, {key_of(0)}, {0}).ok, all_ok(1));
  EXPECT_EQ(a->stats().stores_skipped, 1);
  EXPECT_EQ(a->lookup(key_of(0)), LookupResult::kHit);  // local: key 1 is now the oldest
  EXPECT_EQ(run_job(*a, false, 3, {key_of(2)}, {2}).ok, all_ok(1));
  const TierStats s = a->stats();
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.num_chunks, 2);
  EXPECT_EQ(a->lookup(key_of(0)), LookupResult::kHit);
  EXPECT_EQ(a->lookup(key_of(2)), LookupResult::kHit);
  EXPECT_EQ(a->lookup(key_of(1)), LookupResult::kMiss);  // no peers to ask
  // A local hit loads from memory, verified.
  EXPECT_EQ(run_job(*a, true, 4, {key_of(2)}, {3}).ok, all_ok(1));
  EXPECT_TRUE(mem.holds(3, 2));
}

TEST(P2pTier, KeysNoPeerHoldsAreMissesForMissTtl) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  auto a = make_tier(tier_config(), mem_a);
  auto b = make_tier(tier_config({address_of(*a)}), mem_b);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->lookup(key_of(7)), LookupResult::kRetry);
  EXPECT_EQ(settle(*b, key_of(7)), LookupResult::kMiss);
  EXPECT_EQ(b->lookup(key_of(7)), LookupResult::kMiss);  // cached
  // Stored meanwhile: found once the negative answer expires (200 ms).
  mem_a.fill(0, 3);
  run_job(*a, false, 1, {key_of(7)}, {0});
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(settle(*b, key_of(7)), LookupResult::kHit);
  EXPECT_EQ(b->stats().probe_failures, 0);
}

TEST(P2pTier, TheFirstConfiguredPeerHoldingAKeyServesIt) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_c(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  auto a = make_tier(tier_config(), mem_a);
  auto c = make_tier(tier_config(), mem_c);
  ASSERT_TRUE(a && c);
  mem_c.fill(0, 42);
  run_job(*c, false, 1, {key_of(1)}, {0});
  auto b = make_tier(tier_config({address_of(*a), address_of(*c)}), mem_b);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(settle(*b, key_of(1)), LookupResult::kHit);
  EXPECT_EQ(run_job(*b, true, 2, {key_of(1)}, {1}).ok, all_ok(1));
  EXPECT_TRUE(mem_b.holds(1, 42));
  EXPECT_TRUE(eventually([&] { return c->p2p_stats().server.chunks_served == 1; }));
  EXPECT_EQ(a->p2p_stats().server.chunks_served, 0);
}

TEST(P2pTier, ANamedPeerIsWaitedForWhileItMayStillBeStoring) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  auto a = make_tier(tier_config(), mem_a);
  ASSERT_NE(a, nullptr);
  P2pTierConfig config = tier_config();  // no configured peers: only the named, allowed one
  config.allowed_remote_peers = {address_of(*a)};
  auto b = make_tier(config, mem_b);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->lookup(key_of(3)), LookupResult::kMiss);  // nobody named, nobody configured
  // P/D: the decoder asks before the prefiller has stored the chunk.
  EXPECT_EQ(settle(*b, key_of(3), named(*a), milliseconds(200)), LookupResult::kRetry);
  mem_a.fill(1, 9);
  run_job(*a, false, 1, {key_of(3)}, {1});
  EXPECT_EQ(settle(*b, key_of(3), named(*a)), LookupResult::kHit);
  EXPECT_EQ(run_job(*b, true, 2, {key_of(3)}, {0}).ok, all_ok(1));
  EXPECT_TRUE(mem_b.holds(0, 9));
}

TEST(P2pTier, ANamedPeerThatNeverGetsTheKeyIsAMissAfterRemoteWait) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  auto a = make_tier(tier_config(), mem_a);
  ASSERT_NE(a, nullptr);
  P2pTierConfig config = tier_config();
  config.remote_wait_ms = 100;
  config.allowed_remote_peers = {"127.0.0.0/8:" + std::to_string(a->port())};
  auto b = make_tier(config, mem_b);
  ASSERT_TRUE(a && b);
  const auto start = Clock::now();
  EXPECT_EQ(settle(*b, key_of(4), named(*a)), LookupResult::kMiss);
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, milliseconds(100));
  EXPECT_LT(waited, milliseconds(2000));
  EXPECT_GT(a->p2p_stats().server.keys_looked_up, 1);  // asked again while waiting
}

// A TCP listener on 127.0.0.1 that counts the connections it is offered.
class CountingListener {
 public:
  CountingListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~CountingListener() { ::close(fd_); }
  int port() const { return port_; }
  // Accepts (and closes) every connection that arrives within `timeout`.
  int count_connections(milliseconds timeout) {
    int n = 0;
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return n;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return n;
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn >= 0) {
        ++n;
        ::close(conn);
      }
    }
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// kv_transfer_params name peers; the server connects only to allowed ones.
TEST(P2pTier, RequestNamedPeersOutsideTheAllowlistAreNeverContacted) {
  CountingListener target;   // what a client would like the server to probe
  CountingListener allowed;  // the control: an allowed peer does get a connection
  HostMemory mem(small_format(), 2);
  P2pTierConfig config = tier_config({"127.0.0.1:" + std::to_string(allowed.port() == 1 ? 2 : 1)});
  config.allowed_remote_peers = {"127.0.0.1:" + std::to_string(allowed.port()), "10.0.0.0/8:*",
                                 "[fd00::/8]:*", "peer.internal:*"};
  auto tier = make_tier(config, mem);
  ASSERT_NE(tier, nullptr);

  const std::string port = std::to_string(target.port());
  const std::pair<const char*, const char*> refused[] = {
      {"req-a", "127.0.0.1"}, {"req-b", "localhost"}, {"req-c", "::ffff:127.0.0.1"},
      {"req-d", "127.1"},     {"req-e", "[::1]"},      {"req-f", "2130706433"}};
  for (const auto& [request_id, host] : refused) {
    const TierLookupContext context{request_id, host, target.port()};
    for (uint64_t k = 0; k < 4; ++k) {  // a request looks up its chunks one by one
      EXPECT_EQ(tier->lookup_for(key_of(k), context), LookupResult::kMiss) << host;
    }
  }
  tier->drain();
  EXPECT_EQ(target.count_connections(milliseconds(500)), 0);
  const TierStats s = tier->stats();
  EXPECT_EQ(s.remote_peers_refused, 6);  // once per request, not per chunk
  EXPECT_EQ(s.chunk_lookups, 24);
  EXPECT_EQ(tier->p2p_stats().client.connections_opened, 0);

  // The control: the same path with an allowed peer opens a connection.
  const TierLookupContext ok{"req-ok", "127.0.0.1", allowed.port()};
  EXPECT_EQ(tier->lookup_for(key_of(9), ok), LookupResult::kRetry);
  EXPECT_GE(allowed.count_connections(milliseconds(2000)), 1);
  EXPECT_EQ(tier->stats().remote_peers_refused, 6);
}

TEST(P2pTierConfig, AllowedRemotePeersAreChecked) {
  HostMemory mem(small_format(), 1);
  P2pTierConfig config = tier_config();
  config.allowed_remote_peers = {"10.0.0.0/8:5710", "10.0.0.1"};
  StatusOr<std::unique_ptr<P2pTier>> t = create_p2p_tier(config, small_format(), mem.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("allowed_remote_peers[1]"), std::string::npos)
      << t.status().message();
}

TEST(P2pTier, WrongSecretMeansNoTransferOnlyMissesAndCounters) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  auto a = make_tier(tier_config(), mem_a);
  ASSERT_NE(a, nullptr);
  mem_a.fill(0, 1);
  run_job(*a, false, 1, {key_of(0)}, {0});
  P2pTierConfig config = tier_config({address_of(*a)});
  config.secret = "another-secret-of-enough-bytes";
  auto b = make_tier(config, mem_b);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(settle(*b, key_of(0)), LookupResult::kMiss);
  EXPECT_EQ(settle(*b, key_of(0), named(*a)), LookupResult::kMiss);
  EXPECT_GE(b->stats().probe_failures, 1);
  EXPECT_EQ(b->p2p_stats().client.auth_failures, 1);  // then backoff: no new handshake
  EXPECT_EQ(b->p2p_stats().client.connections_opened, 0);
  EXPECT_TRUE(eventually([&] { return a->p2p_stats().server.auth_failures == 1; }));
  const P2pServerStats served = a->p2p_stats().server;
  EXPECT_EQ(served.keys_looked_up, 0);
  EXPECT_EQ(served.chunks_served, 0);
}

TEST(P2pTier, PeersWithAnotherChunkFormatExchangeNothing) {
  HostMemory mem_a(small_format(), 2);
  const ChunkFormat other = small_format("another-model");
  HostMemory mem_b(other, 2);
  auto a = make_tier(tier_config(), mem_a);
  ASSERT_NE(a, nullptr);
  auto b = make_tier(tier_config({address_of(*a)}), mem_b, other);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(settle(*b, key_of(0)), LookupResult::kMiss);
  EXPECT_EQ(b->p2p_stats().client.wrong_namespace, 1);
  EXPECT_TRUE(eventually([&] { return a->p2p_stats().server.wrong_namespace == 1; }));
}

TEST(P2pTier, UnreachablePeersAreMissesAndBackedOff) {
  StatusOr<p2p::Socket> closed = p2p::listen_tcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(closed.ok());
  const int port = p2p::local_port(*closed);
  closed->close();
  HostMemory mem(small_format(), 2);
  auto b = make_tier(tier_config({"127.0.0.1:" + std::to_string(port)}), mem);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(settle(*b, key_of(0)), LookupResult::kMiss);
  EXPECT_EQ(settle(*b, key_of(1)), LookupResult::kMiss);
  EXPECT_EQ(b->stats().probe_failures, 2);
  const P2pClientStats client = b->p2p_stats().client;
  EXPECT_EQ(client.connect_failures, 1);
  EXPECT_EQ(client.fast_failures, 1);
}

TEST(P2pTier, AStalledPeerTimesOutIntoMisses) {
  // Listens (the kernel completes TCP handshakes) but never accepts or answers.
  StatusOr<p2p::Socket> stalled = p2p::listen_tcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(stalled.ok());
  HostMemory mem(small_format(), 2);
  P2pTierConfig config = tier_config({"127.0.0.1:" + std::to_string(p2p::local_port(*stalled))});
  config.io_timeout_ms = 150;
  auto b = make_tier(config, mem);
  ASSERT_NE(b, nullptr);
  const auto start = Clock::now();
  EXPECT_EQ(settle(*b, key_of(0)), LookupResult::kMiss);
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  EXPECT_EQ(b->stats().probe_failures, 1);
}

TEST(P2pTier, APeerStoppedMidTransferIsAMissWithoutAHang) {
  HostMemory mem_a(small_format(), 2);
  HostMemory mem_b(small_format(), 2);
  P2pTierConfig slow = tier_config();
  slow.debug_serve_delay = milliseconds(3000);
  auto a = make_tier(slow, mem_a);
  ASSERT_NE(a, nullptr);
  mem_a.fill(0, 5);
  run_job(*a, false, 1, {key_of(0)}, {0});
  const std::string address = address_of(*a);
  auto b = make_tier(tier_config({address}), mem_b);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(settle(*b, key_of(0)), LookupResult::kHit);
  const auto start = Clock::now();
  b->submit_load(TierJob{2, {key_of(0)}, {1}});
  std::this_thread::sleep_for(milliseconds(200));  // A sent the chunk header, then pauses
  a.reset();                                       // the peer goes away mid-chunk
  EXPECT_LT(Clock::now() - start, milliseconds(1500)) << "stopping the server waited for the send";
  b->drain();
  EXPECT_LT(Clock::now() - start, milliseconds(2000)) << "the load waited for the dead peer";
  std::vector<TierJobResult> results = b->poll_finished();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].ok, std::vector<bool>{false});
  EXPECT_EQ(b->stats().load_failures, 1);
  EXPECT_EQ(b->lookup(key_of(0)), LookupResult::kMiss);  // forgotten: recompute
  // And the peer stays unreachable: misses, not errors or hangs.
  EXPECT_EQ(settle(*b, key_of(9)), LookupResult::kMiss);
}

// A hand-written peer that authenticates properly and then misbehaves.
class FakePeer {
 public:
  enum class Mode { kCorruptPayload, kAbsurdLength, kWrongKey };

  FakePeer(Mode mode, const ChunkFormat& format) : mode_(mode), format_(format) {
    StatusOr<p2p::Socket> listener = p2p::listen_tcp("127.0.0.1", 0, 4);
    EXPECT_TRUE(listener.ok());
    listener_ = std::move(listener).value();
    port_ = p2p::local_port(listener_);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakePeer() {
    listener_.shutdown_both();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  void serve() {
    p2p::Socket s(::accept(listener_.fd(), nullptr, nullptr));
    if (!s.is_open()) return;
    const int fd = s.fd();
    const p2p::NamespaceId ns = p2p::namespace_id_of(format_);
    StatusOr<p2p::FrameHeader> h = p2p::read_frame_header(fd, 0, 2000);
    if (!h.ok()) return;
    StatusOr<p2p::Hello> hello = p2p::decode_hello(*p2p::read_body(fd, *h, 2000));
    if (!hello.ok()) return;
    p2p::Challenge ch{p2p::random_nonce(), {}};
    ch.server_mac =
        p2p::compute_mac(kSecret, p2p::Role::kServer, hello->client_nonce, ch.server_nonce, ns);
    (void)p2p::send_message(fd, p2p::MessageType::kChallenge, p2p::encode_challenge(ch), 2000);
    h = p2p::read_frame_header(fd, 0, 2000);
    if (!h.ok() || !p2p::read_body(fd, *h, 2000).ok()) return;
    (void)p2p::send_message(fd, p2p::MessageType::kAuthOk, {}, 2000);
    for (;;) {
      h = p2p::read_frame_header(fd, 0, 2000);
      if (!h.ok()) return;
      StatusOr<std::vector<uint8_t>> body = p2p::read_body(fd, *h, 2000);
      if (!body.ok()) return;
      if (h->type == p2p::MessageType::kLookup) {
        const size_t n = p2p::decode_lookup(*body)->size();
        (void)p2p::send_message(fd, p2p::MessageType::kLookupReply,
                                p2p::encode_lookup_reply(std::vector<bool>(n, true)), 2000);
        continue;
      }
      const ChunkKey key = *p2p::decode_key(*body);
      send_chunk(fd, key);
    }
  }

  void send_chunk(int fd, const ChunkKey& key) {
    std::vector<uint8_t> payload(static_cast<size_t>(format_.payload_bytes()), 0x5a);
    std::array<uint8_t, kHeaderBytes> header;
    const ChunkKey framed_key = mode_ == Mode::kWrongKey ? ChunkKey{key.low + 1, key.high} : key;
    encode_chunk_header(format_, framed_key, payload, header);
    if (mode_ == Mode::kCorruptPayload) payload[17] ^= 1;
    const uint64_t body_bytes =
        mode_ == Mode::kAbsurdLength ? uint64_t{1} << 40 : header.size() + payload.size();
    std::array<uint8_t, p2p::kFrameHeaderBytes> frame;
    p2p::encode_frame_header({p2p::MessageType::kChunk, body_bytes}, frame);
    iovec iov[3] = {{frame.data(), frame.size()},
                    {header.data(), header.size()},
                    {payload.data(), payload.size()}};
    (void)p2p::write_all(fd, iov, 2000);
  }

  const Mode mode_;
  const ChunkFormat format_;
  p2p::Socket listener_;
  int port_ = 0;
  std::thread thread_;
};

class P2pTierBadPeer : public ::testing::TestWithParam<FakePeer::Mode> {};

TEST_P(P2pTierBadPeer, BadChunksFailVerificationAndAreForgotten) {
  const ChunkFormat format = small_format();
  FakePeer peer(GetParam(), format);
  HostMemory mem(format, 2);
  auto b = make_tier(tier_config({"127.0.0.1:" + std::to_string(peer.port())}), mem);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(settle(*b, key_of(0)), LookupResult::kHit);
  EXPECT_EQ(run_job(*b, true, 1, {key_of(0)}, {0}).ok, std::vector<bool>{false});
  EXPECT_EQ(b->stats().load_failures, 1);
  EXPECT_EQ(b->stats().load_bytes, 0);
  EXPECT_EQ(b->lookup(key_of(0)), LookupResult::kMiss);
}

INSTANTIATE_TEST_SUITE_P(Modes, P2pTierBadPeer,
                         ::testing::Values(FakePeer::Mode::kCorruptPayload,
                                           FakePeer::Mode::kAbsurdLength,
                                           FakePeer::Mode::kWrongKey));

TEST(P2pServer, UnauthenticatedConnectionsGetNothingAndAreClosed) {
  HostMemory mem(small_format(), 2);
  auto a = make_tier(tier_config(), mem);
  ASSERT_NE(a, nullptr);
  mem.fill(0, 1);
  run_job(*a, false, 1, {key_of(0)}, {0});
  {
    // Straight to LOOKUP, no HELLO.
    StatusOr<p2p::Socket> s = p2p::connect_tcp("127.0.0.1", a->port(), 1000);
    ASSERT_TRUE(s.ok());
    const std::vector<ChunkKey> keys = {key_of(0)};
    ASSERT_TRUE(
        p2p::send_message(s->fd(), p2p::MessageType::kLookup, p2p::encode_lookup(keys), 1000).ok());
    StatusOr<p2p::FrameHeader> h = p2p::read_frame_header(s->fd(), 0, 1000);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->type, p2p::MessageType::kError);
    ASSERT_TRUE(p2p::read_body(s->fd(), *h, 1000).ok());
    EXPECT_FALSE(p2p::read_frame_header(s->fd(), 0, 1000).ok());  // closed
  }
  {
    // HELLO, then a MAC made with the wrong secret.
    StatusOr<p2p::Socket> s = p2p::connect_tcp("127.0.0.1", a->port(), 1000);
    ASSERT_TRUE(s.ok());
    const p2p::Hello hello{p2p::random_nonce(), p2p::namespace_id_of(small_format())};
    ASSERT_TRUE(
        p2p::send_message(s->fd(), p2p::MessageType::kHello, p2p::encode_hello(hello), 1000).ok());
    StatusOr<p2p::FrameHeader> h = p2p::read_frame_header(s->fd(), 0, 1000);
    ASSERT_TRUE(h.ok());
    ASSERT_EQ(h->type, p2p::MessageType::kChallenge);
    StatusOr<p2p::Challenge> ch = p2p::decode_challenge(*p2p::read_body(s->fd(), *h, 1000));
    ASSERT_TRUE(ch.ok());
    // The server proved it knows the secret.
    EXPECT_TRUE(p2p::mac_equal(ch->server_mac,
                               p2p::compute_mac(kSecret, p2p::Role::kServer, hello.client_nonce,
                                                ch->server_nonce, hello.namespace_id)));
    const p2p::Mac wrong =
        p2p::compute_mac("not-the-secret-at-all", p2p::Role::kClient, hello.client_nonce,
                         ch->server_nonce, hello.namespace_id);
    ASSERT_TRUE(
        p2p::send_message(s->fd(), p2p::MessageType::kAuth, p2p::encode_mac(wrong), 1000).ok());
    h = p2p::read_frame_header(s->fd(), 0, 1000);
    ASSERT_TRUE(h.ok());
    ASSERT_EQ(h->type, p2p::MessageType::kError);
    StatusOr<p2p::ErrorMessage> e = p2p::decode_error(*p2p::read_body(s->fd(), *h, 1000));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->code, p2p::ErrorCode::kAuthFailed);
    EXPECT_FALSE(p2p::read_frame_header(s->fd(), 0, 1000).ok());
  }
  {
    // An absurd length is refused before the body is read.
    StatusOr<p2p::Socket> s = p2p::connect_tcp("127.0.0.1", a->port(), 1000);
    ASSERT_TRUE(s.ok());
    std::array<uint8_t, p2p::kFrameHeaderBytes> frame;
    p2p::encode_frame_header({p2p::MessageType::kHello, uint64_t{1} << 50}, frame);
    iovec iov[1] = {{frame.data(), frame.size()}};
    ASSERT_TRUE(p2p::write_all(s->fd(), iov, 1000).ok());
    EXPECT_FALSE(p2p::read_frame_header(s->fd(), 0, 1000).ok());  // closed without an answer
  }
  EXPECT_TRUE(eventually([&] { return a->p2p_stats().server.auth_failures == 3; }));
  const P2pServerStats stats = a->p2p_stats().server;
  EXPECT_EQ(stats.keys_looked_up, 0);
  EXPECT_EQ(stats.chunks_served, 0);
}

TEST(P2pTierConfig, NoSecretNoTransfer) {
  ::unsetenv("STRATA_P2P_SECRET");
  HostMemory mem(small_format(), 2);
  P2pTierConfig config = tier_config();
  config.secret = "";
  StatusOr<std::unique_ptr<SecondaryTier>> tier = make_p2p_tier(config, small_format(), mem.region);
  ASSERT_FALSE(tier.ok());
  EXPECT_NE(tier.status().message().find("no secret, no transfer"), std::string::npos);
  EXPECT_NE(tier.status().message().find("STRATA_P2P_SECRET"), std::string::npos);

  config.secret = "short";
  tier = make_p2p_tier(config, small_format(), mem.region);
  ASSERT_FALSE(tier.ok());
  EXPECT_NE(tier.status().message().find("the secret has 5 bytes; use at least 16"),
            std::string::npos);

  config.secret = "";
  ::setenv("STRATA_P2P_SECRET", kSecret, 1);
  tier = make_p2p_tier(config, small_format(), mem.region);
  ::unsetenv("STRATA_P2P_SECRET");
  EXPECT_TRUE(tier.ok()) << tier.status().message();
}

TEST(P2pTierConfig, BadSettingsAreNamed) {
  HostMemory mem(small_format(), 2);
  P2pTierConfig config = tier_config({"127.0.0.1:5711", "nohost"});
  StatusOr<std::unique_ptr<SecondaryTier>> tier = make_p2p_tier(config, small_format(), mem.region);
  ASSERT_FALSE(tier.ok());
  EXPECT_NE(tier.status().message().find("peers[1]"), std::string::npos);
  EXPECT_NE(tier.status().message().find("'nohost'"), std::string::npos);

  auto a = make_tier(tier_config(), mem);
  ASSERT_NE(a, nullptr);
  config = tier_config();
  config.port = a->port();
  tier = make_p2p_tier(config, small_format(), mem.region);
  ASSERT_FALSE(tier.ok());
  EXPECT_NE(tier.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(a->port())),
            std::string::npos)
      << tier.status().message();

  config = tier_config();
  config.max_bytes = 100;
  EXPECT_NE(make_p2p_tier(config, small_format(), mem.region).status().message().find("max_bytes"),
            std::string::npos);
}

TEST(PeerAddress, Parses) {
  StatusOr<PeerAddress> a = parse_peer_address("10.0.0.2:5710");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "10.0.0.2");
  EXPECT_EQ(a->port, 5710);
  StatusOr<PeerAddress> v6 = parse_peer_address("[::1]:7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->to_string(), "[::1]:7");
  for (const char* bad :
       {"", "host", ":5710", "host:", "host:0", "host:65536", "host:12x", "::1:5710", "[]:5"}) {
    EXPECT_FALSE(parse_peer_address(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace strata::offload
