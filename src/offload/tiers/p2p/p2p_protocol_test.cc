#include "offload/tiers/p2p/p2p_protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <thread>

#include "offload/tiers/p2p/p2p_socket.h"

namespace strata::offload::p2p {
namespace {

std::array<uint8_t, kFrameHeaderBytes> header_of(MessageType type, uint64_t body_bytes) {
  std::array<uint8_t, kFrameHeaderBytes> out;
  encode_frame_header({type, body_bytes}, out);
  return out;
}

TEST(P2pProtocol, FrameHeaderIsLittleEndianAndVersioned) {
  const auto h = header_of(MessageType::kLookup, 0x0102030405060708ull);
  EXPECT_EQ(std::string(h.begin(), h.begin() + 4), "SKVP");
  EXPECT_EQ(h[4], 1);  // version 1, LE
  EXPECT_EQ(h[5], 0);
  EXPECT_EQ(h[6], static_cast<uint8_t>(MessageType::kLookup));
  EXPECT_EQ(h[7], 0);
  EXPECT_EQ(h[8], 0x08);
  EXPECT_EQ(h[15], 0x01);
}

TEST(P2pProtocol, FrameHeaderRoundTrips) {
  for (MessageType type : {MessageType::kHello, MessageType::kLookup, MessageType::kFetch,
                           MessageType::kDone, MessageType::kError}) {
    const uint64_t body = max_body_bytes(type, 0);
    StatusOr<FrameHeader> h = decode_frame_header(header_of(type, body), 0);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(h->type, type);
    EXPECT_EQ(h->body_bytes, body);
  }
  StatusOr<FrameHeader> chunk = decode_frame_header(header_of(MessageType::kChunk, 1096), 1096);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->body_bytes, 1096u);
}

TEST(P2pProtocol, RejectsBadMagicVersionTypeAndShortHeaders) {
  auto h = header_of(MessageType::kFetch, 16);
  h[0] = 'G';  // "GET / HTTP/1.1" from a confused client
  EXPECT_NE(decode_frame_header(h, 0).status().message().find("bad magic"), std::string::npos);
  h = header_of(MessageType::kFetch, 16);
  h[4] = 2;
  EXPECT_NE(decode_frame_header(h, 0).status().message().find("protocol version 2"),
            std::string::npos);
  h = header_of(MessageType::kFetch, 16);
  h[6] = 99;
  EXPECT_NE(decode_frame_header(h, 0).status().message().find("unknown message type 99"),
            std::string::npos);
  h = header_of(MessageType::kFetch, 16);
  h[6] = 0;
  EXPECT_FALSE(decode_frame_header(h, 0).ok());
  EXPECT_FALSE(decode_frame_header(std::span<const uint8_t>(h.data(), 15), 0).ok());
}

TEST(P2pProtocol, RejectsAbsurdLengthsBeforeReadingTheBody) {
  const std::string message =
      decode_frame_header(header_of(MessageType::kLookup, uint64_t{1} << 40), 0).status().message();
  EXPECT_NE(message.find("LOOKUP body of 1099511627776 bytes exceeds"), std::string::npos)
      << message;
  EXPECT_FALSE(decode_frame_header(header_of(MessageType::kHello, 65), 0).ok());
  EXPECT_FALSE(decode_frame_header(header_of(MessageType::kAuthOk, 1), 0).ok());
  EXPECT_FALSE(
      decode_frame_header(header_of(MessageType::kError, 4 + kMaxErrorMessageBytes + 1), 0).ok());
  // CHUNK bodies are bounded by what the receiver expects; a server expects none.
  EXPECT_FALSE(decode_frame_header(header_of(MessageType::kChunk, 1097), 1096).ok());
  EXPECT_FALSE(decode_frame_header(header_of(MessageType::kChunk, 1), 0).ok());
  EXPECT_FALSE(decode_frame_header(header_of(MessageType::kChunk, ~uint64_t{0}), 1096).ok());
}

TEST(P2pProtocol, LookupAndReplyRoundTrip) {
  std::vector<ChunkKey> keys;
  for (uint64_t i = 0; i < 11; ++i) keys.push_back({i * 3 + 1, ~i});
  StatusOr<std::vector<ChunkKey>> decoded = decode_lookup(encode_lookup(keys));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(*decoded, keys);

  std::vector<bool> present = {true,  false, false, true,  true, false,
                               false, false, true,  false, true};
  std::vector<uint8_t> reply = encode_lookup_reply(present);
  EXPECT_EQ(reply.size(), 4u + 2u);
  StatusOr<std::vector<bool>> answered = decode_lookup_reply(reply, present.size());
  ASSERT_TRUE(answered.ok()) << answered.status().message();
  EXPECT_EQ(*answered, present);
  EXPECT_NE(decode_lookup_reply(reply, 10).status().message().find("answers 11 keys; asked 10"),
            std::string::npos);
}

TEST(P2pProtocol, RejectsMalformedLookups) {
  std::vector<uint8_t> body = encode_lookup(std::vector<ChunkKey>(3));
  body.pop_back();  // count says 3 keys, body holds 2.9
  EXPECT_FALSE(decode_lookup(body).ok());
  std::vector<uint8_t> zero(4, 0);
  EXPECT_NE(decode_lookup(zero).status().message().find("0 keys"), std::string::npos);
  std::vector<uint8_t> huge = {0xff, 0xff, 0xff, 0xff};
  EXPECT_NE(decode_lookup(huge).status().message().find("4294967295 keys"), std::string::npos);
  EXPECT_FALSE(decode_lookup({}).ok());
  std::vector<uint8_t> reply = encode_lookup_reply({true, true});
  reply.push_back(0);
  EXPECT_FALSE(decode_lookup_reply(reply, 2).ok());
}

TEST(P2pProtocol, KeysHelloChallengeAndErrorsRoundTrip) {
  const ChunkKey key{0x1122334455667788ull, 0x99aabbccddeeff00ull};
  std::vector<uint8_t> k = encode_key(key);
  EXPECT_EQ(k[0], 0x88);  // low word first, LE
  EXPECT_EQ(k[15], 0x99);
  EXPECT_TRUE(decode_key(k).ok() && *decode_key(k) == key);
  k.push_back(0);
  EXPECT_FALSE(decode_key(k).ok());

  Hello hello{random_nonce(), {}};
  hello.namespace_id.fill('a');
  StatusOr<Hello> h = decode_hello(encode_hello(hello));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->client_nonce, hello.client_nonce);
  EXPECT_EQ(h->namespace_id, hello.namespace_id);
  EXPECT_FALSE(decode_hello(std::vector<uint8_t>(63)).ok());

  Challenge c{random_nonce(), {}};
  c.server_mac.fill(7);
  StatusOr<Challenge> d = decode_challenge(encode_challenge(c));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->server_nonce, c.server_nonce);
  EXPECT_EQ(d->server_mac, c.server_mac);

  StatusOr<ErrorMessage> e = decode_error(encode_error({ErrorCode::kBusy, "too many"}));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, ErrorCode::kBusy);
  EXPECT_EQ(e->message, "too many");
  EXPECT_EQ(encode_error({ErrorCode::kProtocol, std::string(5000, 'x')}).size(),
            4 + kMaxErrorMessageBytes);
}

TEST(P2pProtocol, MacsDependOnSecretRoleNoncesAndNamespace) {
  const Nonce client = random_nonce();
  const Nonce server = random_nonce();
  EXPECT_NE(client, server);
  NamespaceId ns;
  ns.fill('0');
  const std::string secret = "0123456789abcdef";
  const Mac mac = compute_mac(secret, Role::kClient, client, server, ns);
  EXPECT_TRUE(mac_equal(mac, compute_mac(secret, Role::kClient, client, server, ns)));
  EXPECT_FALSE(mac_equal(mac, compute_mac("0123456789abcdeF", Role::kClient, client, server, ns)));
  EXPECT_FALSE(mac_equal(mac, compute_mac(secret, Role::kServer, client, server, ns)));
  EXPECT_FALSE(mac_equal(mac, compute_mac(secret, Role::kClient, server, client, ns)));
  NamespaceId other = ns;
  other[31] = '1';
  EXPECT_FALSE(mac_equal(mac, compute_mac(secret, Role::kClient, client, server, other)));
}

TEST(P2pProtocol, MacMatchesAnIndependentHmacSha256) {
  // Python's hmac module over the same bytes:
  //   hmac.new(b"Jefe", b"strata-p2p-v1 server" + bytes(96), hashlib.sha256).hexdigest()
  // (client nonce, server nonce and namespace all zero).
  const Mac mac = compute_mac("Jefe", Role::kServer, Nonce{}, Nonce{}, NamespaceId{});
  std::string hex;
  for (uint8_t byte : mac) {
    static const char kDigits[] = "0123456789abcdef";
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  EXPECT_EQ(hex, "13015064b6e360ac63d5378123a2c6681fada40146f8750ff7a84a6e54700e9e");
}

// Framed I/O over a socketpair: bounded reads, timeouts, and closed peers.
class SocketPair : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a_ = Socket(fds[0]);
    b_ = Socket(fds[1]);
  }
  Socket a_;
  Socket b_;
};

TEST_F(SocketPair, MessagesCrossWhole) {
  const std::vector<uint8_t> body = encode_key({5, 6});
  ASSERT_TRUE(send_message(a_.fd(), MessageType::kFetch, body, 1000).ok());
  StatusOr<FrameHeader> h = read_frame_header(b_.fd(), 0, 1000);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->type, MessageType::kFetch);
  StatusOr<std::vector<uint8_t>> got = read_body(b_.fd(), *h, 1000);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, body);
}

TEST_F(SocketPair, ReadsTimeOutWithoutProgress) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<FrameHeader> h = read_frame_header(b_.fd(), 0, 100);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("no data for 100 ms"), std::string::npos);
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  EXPECT_LT(waited, std::chrono::seconds(2));
}

TEST_F(SocketPair, APeerClosingMidFrameIsAnError) {
  const auto header = header_of(MessageType::kLookup, 4 + 16);
  ASSERT_EQ(::write(a_.fd(), header.data(), header.size()), 16);
  ASSERT_EQ(::write(a_.fd(), "\x01\x00\x00\x00\x07", 5), 5);
  a_.close();
  StatusOr<FrameHeader> h = read_frame_header(b_.fd(), 0, 1000);
  ASSERT_TRUE(h.ok());
  StatusOr<std::vector<uint8_t>> body = read_body(b_.fd(), *h, 1000);
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("closed by the peer after 5 of 20 bytes"),
            std::string::npos)
      << body.status().message();
}

TEST_F(SocketPair, ShutdownWakesABlockedReader) {
  std::thread waker([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b_.shutdown_both();
  });
  const auto start = std::chrono::steady_clock::now();
  StatusOr<FrameHeader> h = read_frame_header(b_.fd(), 0, 10000);
  waker.join();
  EXPECT_FALSE(h.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(P2pSocket, ConnectingToAClosedPortFailsFast) {
  StatusOr<Socket> listener = listen_tcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok());
  const int port = local_port(*listener);
  listener->close();
  StatusOr<Socket> s = connect_tcp("127.0.0.1", port, 1000);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("p2p peer 127.0.0.1:" + std::to_string(port)),
            std::string::npos);
  EXPECT_NE(s.status().message().find("refused"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace strata::offload::p2p
