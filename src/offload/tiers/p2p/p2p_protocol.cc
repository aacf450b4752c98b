#include "offload/tiers/p2p/p2p_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "offload/tiers/common/little_endian.h"

namespace strata::offload::p2p {
namespace {

constexpr std::string_view kServerLabel = "strata-p2p-v1 server";
constexpr std::string_view kClientLabel = "strata-p2p-v1 client";

Status body_size_error(const char* what, size_t got, size_t expected) {
  return invalid_argument(std::string("p2p ") + what + ": body has " + std::to_string(got) +
                          " bytes; expected " + std::to_string(expected));
}

bool is_known_type(uint16_t type) {
  return type >= static_cast<uint16_t>(MessageType::kHello) &&
         type <= static_cast<uint16_t>(MessageType::kError);
}

}  // namespace

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "HELLO";
    case MessageType::kChallenge:
      return "CHALLENGE";
    case MessageType::kAuth:
      return "AUTH";
    case MessageType::kAuthOk:
      return "AUTH_OK";
    case MessageType::kLookup:
      return "LOOKUP";
    case MessageType::kLookupReply:
      return "LOOKUP_REPLY";
    case MessageType::kFetch:
      return "FETCH";
    case MessageType::kChunk:
      return "CHUNK";
    case MessageType::kNotFound:
      return "NOT_FOUND";
    case MessageType::kDone:
      return "DONE";
    case MessageType::kError:
      return "ERROR";
  }
  return "?";
}

uint64_t max_body_bytes(MessageType type, uint64_t chunk_body_bytes) {
  switch (type) {
    case MessageType::kHello:
      return kNonceBytes + kNamespaceBytes;
    case MessageType::kChallenge:
      return kNonceBytes + kMacBytes;
    case MessageType::kAuth:
      return kMacBytes;
    case MessageType::kAuthOk:
    case MessageType::kDone:
      return 0;
    case MessageType::kLookup:
      return 4 + uint64_t{kMaxLookupKeys} * kKeyBytes;
    case MessageType::kLookupReply:
      return 4 + (uint64_t{kMaxLookupKeys} + 7) / 8;
    case MessageType::kFetch:
    case MessageType::kNotFound:
      return kKeyBytes;
    case MessageType::kChunk:
      return chunk_body_bytes;
    case MessageType::kError:
      return 4 + kMaxErrorMessageBytes;
  }
  return 0;
}

void encode_frame_header(const FrameHeader& header, std::span<uint8_t, kFrameHeaderBytes> out) {
  std::memcpy(out.data(), kMagic, 4);
  put_u16(out.data() + 4, kProtocolVersion);
  put_u16(out.data() + 6, static_cast<uint16_t>(header.type));
  put_u64(out.data() + 8, header.body_bytes);
}

StatusOr<FrameHeader> decode_frame_header(std::span<const uint8_t> in, uint64_t chunk_body_bytes) {
  if (in.size() < kFrameHeaderBytes) {
    return invalid_argument("p2p frame: header has " + std::to_string(in.size()) + " bytes; need " +
                            std::to_string(kFrameHeaderBytes));
  }
  if (std::memcmp(in.data(), kMagic, 4) != 0) {
    return invalid_argument("p2p frame: bad magic (not a Strata peer?)");
  }
  const uint16_t version = get_u16(in.data() + 4);
  if (version != kProtocolVersion) {
    return invalid_argument("p2p frame: protocol version " + std::to_string(version) +
                            "; this build speaks " + std::to_string(kProtocolVersion));
  }
  const uint16_t type = get_u16(in.data() + 6);
  if (!is_known_type(type)) {
    return invalid_argument("p2p frame: unknown message type " + std::to_string(type));
  }
  FrameHeader header{static_cast<MessageType>(type), get_u64(in.data() + 8)};
  const uint64_t limit = max_body_bytes(header.type, chunk_body_bytes);
  if (header.body_bytes > limit) {
    return invalid_argument(std::string("p2p frame: ") + message_type_name(header.type) +
                            " body of " + std::to_string(header.body_bytes) + " bytes exceeds " +
                            std::to_string(limit));
  }
  return header;
}

std::vector<uint8_t> encode_message(MessageType type, std::span<const uint8_t> body) {
  std::vector<uint8_t> out(kFrameHeaderBytes + body.size());
  encode_frame_header({type, body.size()},
                      std::span<uint8_t, kFrameHeaderBytes>(out.data(), kFrameHeaderBytes));
  if (!body.empty()) std::memcpy(out.data() + kFrameHeaderBytes, body.data(), body.size());
  return out;
}

std::vector<uint8_t> encode_hello(const Hello& hello) {
  std::vector<uint8_t> out(kNonceBytes + kNamespaceBytes);
  std::memcpy(out.data(), hello.client_nonce.data(), kNonceBytes);
  std::memcpy(out.data() + kNonceBytes, hello.namespace_id.data(), kNamespaceBytes);
  return out;
}

StatusOr<Hello> decode_hello(std::span<const uint8_t> body) {
  if (body.size() != kNonceBytes + kNamespaceBytes) {
    return body_size_error("HELLO", body.size(), kNonceBytes + kNamespaceBytes);
  }
  Hello hello;
  std::memcpy(hello.client_nonce.data(), body.data(), kNonceBytes);
  std::memcpy(hello.namespace_id.data(), body.data() + kNonceBytes, kNamespaceBytes);
  return hello;
}

std::vector<uint8_t> encode_challenge(const Challenge& challenge) {
  std::vector<uint8_t> out(kNonceBytes + kMacBytes);
  std::memcpy(out.data(), challenge.server_nonce.data(), kNonceBytes);
  std::memcpy(out.data() + kNonceBytes, challenge.server_mac.data(), kMacBytes);
  return out;
}

StatusOr<Challenge> decode_challenge(std::span<const uint8_t> body) {
  if (body.size() != kNonceBytes + kMacBytes) {
    return body_size_error("CHALLENGE", body.size(), kNonceBytes + kMacBytes);
  }
  Challenge challenge;
  std::memcpy(challenge.server_nonce.data(), body.data(), kNonceBytes);
  std::memcpy(challenge.server_mac.data(), body.data() + kNonceBytes, kMacBytes);
  return challenge;
}

std::vector<uint8_t> encode_mac(const Mac& mac) { return {mac.begin(), mac.end()}; }

StatusOr<Mac> decode_mac(std::span<const uint8_t> body) {
  if (body.size() != kMacBytes) return body_size_error("AUTH", body.size(), kMacBytes);
  Mac mac;
  std::memcpy(mac.data(), body.data(), kMacBytes);
  return mac;
}

std::vector<uint8_t> encode_lookup(std::span<const ChunkKey> keys) {
  STRATA_CHECK(!keys.empty() && keys.size() <= kMaxLookupKeys)
      << "LOOKUP of " << keys.size() << " keys; allowed 1.." << kMaxLookupKeys;
  std::vector<uint8_t> out(4 + keys.size() * kKeyBytes);
  put_u32(out.data(), static_cast<uint32_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) put_hash(out.data() + 4 + i * kKeyBytes, keys[i]);
  return out;
}

StatusOr<std::vector<ChunkKey>> decode_lookup(std::span<const uint8_t> body) {
  if (body.size() < 4) return body_size_error("LOOKUP", body.size(), 4);
  const uint32_t n = get_u32(body.data());
  if (n == 0 || n > kMaxLookupKeys) {
    return invalid_argument("p2p LOOKUP: " + std::to_string(n) + " keys; allowed 1.." +
                            std::to_string(kMaxLookupKeys));
  }
  if (body.size() != 4 + size_t{n} * kKeyBytes) {
    return body_size_error("LOOKUP", body.size(), 4 + size_t{n} * kKeyBytes);
  }
  std::vector<ChunkKey> keys(n);
  for (uint32_t i = 0; i < n; ++i) keys[i] = get_hash(body.data() + 4 + size_t{i} * kKeyBytes);
  return keys;
}

std::vector<uint8_t> encode_lookup_reply(const std::vector<bool>& present) {
  std::vector<uint8_t> out(4 + (present.size() + 7) / 8, 0);
  put_u32(out.data(), static_cast<uint32_t>(present.size()));
  for (size_t i = 0; i < present.size(); ++i) {
    if (present[i]) out[4 + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  return out;
}

StatusOr<std::vector<bool>> decode_lookup_reply(std::span<const uint8_t> body,
                                                size_t expected_count) {
  if (body.size() < 4) return body_size_error("LOOKUP_REPLY", body.size(), 4);
  const uint32_t n = get_u32(body.data());
  if (n != expected_count) {
    return invalid_argument("p2p LOOKUP_REPLY: answers " + std::to_string(n) + " keys; asked " +
                            std::to_string(expected_count));
  }
  const size_t expected_bytes = 4 + (size_t{n} + 7) / 8;
  if (body.size() != expected_bytes) {
    return body_size_error("LOOKUP_REPLY", body.size(), expected_bytes);
  }
  std::vector<bool> present(n);
  for (uint32_t i = 0; i < n; ++i) present[i] = (body[4 + i / 8] >> (i % 8)) & 1u;
  return present;
}

std::vector<uint8_t> encode_key(const ChunkKey& key) {
  std::vector<uint8_t> out(kKeyBytes);
  put_hash(out.data(), key);
  return out;
}

StatusOr<ChunkKey> decode_key(std::span<const uint8_t> body) {
  if (body.size() != kKeyBytes) return body_size_error("key", body.size(), kKeyBytes);
  return get_hash(body.data());
}

std::vector<uint8_t> encode_error(const ErrorMessage& error) {
  const size_t n = std::min(error.message.size(), kMaxErrorMessageBytes);
  std::vector<uint8_t> out(4 + n);
  put_u32(out.data(), static_cast<uint32_t>(error.code));
  std::memcpy(out.data() + 4, error.message.data(), n);
  return out;
}

StatusOr<ErrorMessage> decode_error(std::span<const uint8_t> body) {
  if (body.size() < 4 || body.size() > 4 + kMaxErrorMessageBytes) {
    return invalid_argument("p2p ERROR: body has " + std::to_string(body.size()) +
                            " bytes; expected 4.." + std::to_string(4 + kMaxErrorMessageBytes));
  }
  ErrorMessage error;
  error.code = static_cast<ErrorCode>(get_u32(body.data()));
  error.message.assign(reinterpret_cast<const char*>(body.data() + 4), body.size() - 4);
  return error;
}

NamespaceId namespace_id_of(const ChunkFormat& format) {
  const std::string hex = format.namespace_id_hex();
  STRATA_CHECK(hex.size() == kNamespaceBytes) << "namespace id '" << hex << "'";
  NamespaceId id;
  std::memcpy(id.data(), hex.data(), kNamespaceBytes);
  return id;
}

Nonce random_nonce() {
  Nonce nonce;
  STRATA_CHECK(RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) == 1)
      << "OpenSSL RAND_bytes failed";
  return nonce;
}

Mac compute_mac(std::string_view secret, Role role, const Nonce& client_nonce,
                const Nonce& server_nonce, const NamespaceId& namespace_id) {
  const std::string_view label = role == Role::kServer ? kServerLabel : kClientLabel;
  std::vector<uint8_t> message;
  message.reserve(label.size() + 2 * kNonceBytes + kNamespaceBytes);
  message.insert(message.end(), label.begin(), label.end());
  message.insert(message.end(), client_nonce.begin(), client_nonce.end());
  message.insert(message.end(), server_nonce.begin(), server_nonce.end());
  message.insert(message.end(), namespace_id.begin(), namespace_id.end());
  Mac mac{};
  unsigned int mac_len = 0;
  const uint8_t* out = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                            message.data(), message.size(), mac.data(), &mac_len);
  STRATA_CHECK(out != nullptr && mac_len == kMacBytes) << "OpenSSL HMAC-SHA256 failed";
  return mac;
}

bool mac_equal(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), kMacBytes) == 0;
}

}  // namespace strata::offload::p2p
