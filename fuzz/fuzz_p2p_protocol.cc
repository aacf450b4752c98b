// Fuzz target: the peer tier's wire format (bytes from another host). Input
// byte 0 picks what to decode: the frame header with the bytes that follow,
// or one message body decoder; byte 1 (LOOKUP_REPLY) is the key count the
// receiver expects.
#include <cstddef>
#include <cstdint>
#include <span>

#include "offload/tiers/p2p/p2p_protocol.h"

namespace p2p = strata::offload::p2p;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> body(data + 1, size - 1);
  // A CHUNK body bound that a small chunk format gives: header + 4 KiB.
  constexpr uint64_t kChunkBodyBytes = 96 + 4096;
  switch (data[0] % 8) {
    case 0:
      (void)p2p::decode_frame_header(body, kChunkBodyBytes);
      break;
    case 1:
      (void)p2p::decode_hello(body);
      break;
    case 2:
      (void)p2p::decode_challenge(body);
      break;
    case 3:
      (void)p2p::decode_mac(body);
      break;
    case 4:
      (void)p2p::decode_lookup(body);
      break;
    case 5: {
      const size_t expected_count = body.empty() ? 0 : body[0];
      (void)p2p::decode_lookup_reply(body, expected_count);
      break;
    }
    case 6:
      (void)p2p::decode_key(body);
      break;
    case 7:
      (void)p2p::decode_error(body);
      break;
  }
  return 0;
}
