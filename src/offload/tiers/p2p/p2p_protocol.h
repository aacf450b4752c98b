// The peer tier's wire protocol, version 1: how one Strata instance asks
// another, over TCP, which KV chunks it holds and fetches them, host memory to
// host memory. Every field is little-endian; no field's size depends on the
// machine.
//
// Frame = 16-byte header + body:
//   off  size  field
//     0     4  magic "SKVP"
//     4     2  protocol version (1)
//     6     2  message type (below)
//     8     8  body_bytes
// A receiver rejects a wrong magic or version, an unknown type, and a body
// larger than that type allows (max_body_bytes) before reading the body, so a
// peer can never make it allocate or wait for absurd lengths.
//
// Messages (c = the fetching client, s = the serving peer):
//   HELLO        c→s  client_nonce[32] namespace[32]     namespace =
//   ChunkFormat::namespace_id_hex() CHALLENGE    s→c  server_nonce[32] server_mac[32] AUTH c→s
//   client_mac[32] AUTH_OK      s→c  (empty) LOOKUP       c→s  u32 n, n × key[16] 1 <= n <=
//   kMaxLookupKeys LOOKUP_REPLY s→c  u32 n, bitmap[(n+7)/8]              bit i (LSB first) = key i
//   is held FETCH        c→s  key[16] CHUNK        s→c  ChunkHeader[96] payload chunk_format.h
//   framing, verified by c NOT_FOUND    s→c  key[16] DONE         c→s  (empty): the server closes
//   the connection ERROR        s→c  u32 code, message (<= 1024 bytes): the server closes the
//   connection
// key[16] = ChunkKey low word then high word, u64 each.
//
// Authentication (mutual, before anything else; a connection that fails it
// gets an ERROR and is closed):
//   server_mac = HMAC-SHA256(secret, "strata-p2p-v1 server" || client_nonce || server_nonce ||
//   namespace) client_mac = HMAC-SHA256(secret, "strata-p2p-v1 client" || client_nonce ||
//   server_nonce || namespace)
// Each side checks the other's MAC in constant time (CRYPTO_memcmp). Fresh
// random nonces on both sides make every MAC single-use; the labels keep a
// server's answer from being replayed as a client's. The namespace is covered
// so that instances with different models or chunk formats never exchange
// chunks (after authenticating, a server with another namespace answers
// ERROR kWrongNamespace).
//
// Pure functions (plus random_nonce, which reads OpenSSL's RNG); thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "offload/tiers/common/chunk_format.h"

namespace strata::offload::p2p {

inline constexpr uint8_t kMagic[4] = {'S', 'K', 'V', 'P'};
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kNamespaceBytes = 32;  // namespace_id_hex(): 32 ASCII hex digits
inline constexpr size_t kKeyBytes = 16;
inline constexpr uint32_t kMaxLookupKeys = 4096;
inline constexpr size_t kMaxErrorMessageBytes = 1024;

enum class MessageType : uint16_t {
  kHello = 1,
  kChallenge = 2,
  kAuth = 3,
  kAuthOk = 4,
  kLookup = 5,
  kLookupReply = 6,
  kFetch = 7,
  kChunk = 8,
  kNotFound = 9,
  kDone = 10,
  kError = 11,
};

enum class ErrorCode : uint32_t {
  kAuthFailed = 1,
  kWrongNamespace = 2,
  kProtocol = 3,  // unexpected message or malformed body
  kBusy = 4,      // too many connections
};

const char* message_type_name(MessageType type);

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;
using NamespaceId = std::array<uint8_t, kNamespaceBytes>;

struct FrameHeader {
  MessageType type = MessageType::kDone;
  uint64_t body_bytes = 0;
};

// Largest body a receiver accepts for `type`. CHUNK bodies are exactly
// kHeaderBytes + the payload size both sides derive from the chunk format, so
// the caller says what it expects (0 where it never accepts CHUNK).
uint64_t max_body_bytes(MessageType type, uint64_t chunk_body_bytes);

void encode_frame_header(const FrameHeader& header, std::span<uint8_t, kFrameHeaderBytes> out);
// Checks magic, version, type and the body bound. Errors name the field and
// value ("p2p frame: LOOKUP body of 99999999 bytes exceeds 65540").
StatusOr<FrameHeader> decode_frame_header(std::span<const uint8_t> in, uint64_t chunk_body_bytes);

// A whole frame (header + body) for a control message.
std::vector<uint8_t> encode_message(MessageType type, std::span<const uint8_t> body);

struct Hello {
  Nonce client_nonce{};
  NamespaceId namespace_id{};
};
struct Challenge {
  Nonce server_nonce{};
  Mac server_mac{};
};
struct ErrorMessage {
  ErrorCode code = ErrorCode::kProtocol;
  std::string message;
};

std::vector<uint8_t> encode_hello(const Hello& hello);
StatusOr<Hello> decode_hello(std::span<const uint8_t> body);
std::vector<uint8_t> encode_challenge(const Challenge& challenge);
StatusOr<Challenge> decode_challenge(std::span<const uint8_t> body);
std::vector<uint8_t> encode_mac(const Mac& mac);  // AUTH body
StatusOr<Mac> decode_mac(std::span<const uint8_t> body);
// LOOKUP: 1..kMaxLookupKeys keys (checked).
std::vector<uint8_t> encode_lookup(std::span<const ChunkKey> keys);
StatusOr<std::vector<ChunkKey>> decode_lookup(std::span<const uint8_t> body);
std::vector<uint8_t> encode_lookup_reply(const std::vector<bool>& present);
// The reply must answer exactly `expected_count` keys.
StatusOr<std::vector<bool>> decode_lookup_reply(std::span<const uint8_t> body,
                                                size_t expected_count);
std::vector<uint8_t> encode_key(const ChunkKey& key);  // FETCH, NOT_FOUND
StatusOr<ChunkKey> decode_key(std::span<const uint8_t> body);
// The message is truncated to kMaxErrorMessageBytes.
std::vector<uint8_t> encode_error(const ErrorMessage& error);
StatusOr<ErrorMessage> decode_error(std::span<const uint8_t> body);

NamespaceId namespace_id_of(const ChunkFormat& format);

// 32 bytes from OpenSSL's CSPRNG (RAND_bytes); a failing RNG is fatal.
Nonce random_nonce();

enum class Role { kServer, kClient };
Mac compute_mac(std::string_view secret, Role role, const Nonce& client_nonce,
                const Nonce& server_nonce, const NamespaceId& namespace_id);
// Constant time (CRYPTO_memcmp).
bool mac_equal(const Mac& a, const Mac& b);

}  // namespace strata::offload::p2p
