#include "offload/tiers/common/chunk_format.h"

#include <xxhash.h>

#include <cstring>

#include "offload/tiers/common/little_endian.h"
#include "tensor/kv_cache_dtype.h"

namespace strata::offload {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'K', 'V', 'C', 'H', '1'};

// Field offsets inside the header (see the table in chunk_format.h).
constexpr size_t kMagicOff = 0;
constexpr size_t kVersionOff = 8;
constexpr size_t kHeaderBytesOff = 12;
constexpr size_t kNamespaceOff = 16;
constexpr size_t kKeyOff = 32;
constexpr size_t kPayloadBytesOff = 48;
constexpr size_t kPayloadChecksumOff = 56;
constexpr size_t kDtypeOff = 64;
constexpr size_t kHeaderChecksumOff = 88;

kv::BlockHash namespace_id(const ChunkFormat& format) {
  const std::string s = format.namespace_string();
  const XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
  return {h.low64, h.high64};
}

// Fingerprints are normally hex or plain names; escaping ';', '=' and '%'
// (and non-printable bytes) keeps namespace_string() injective anyway.
std::string escape_field(const std::string& s) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == ';' || c == '=' || c == '%' || c < 0x21 || c > 0x7e) {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int64_t ChunkFormat::payload_bytes() const {
  return num_layers * 2 * tokens_per_chunk() * row_layout().row_bytes();
}

std::string ChunkFormat::namespace_string() const {
  return "strata-kv-v" + std::to_string(kChunkFormatVersion) +
         ";model=" + escape_field(model_fingerprint) +
         ";dtype=" + escape_field(tensor::kv_cache_dtype_name(kv_dtype)) +
         ";layers=" + std::to_string(num_layers) + ";kv_heads=" + std::to_string(num_kv_heads) +
         ";head_dim=" + std::to_string(head_dim) + ";tile=" + std::to_string(tile_tokens()) +
         ";tokens=" + std::to_string(tokens_per_chunk());
}

std::string ChunkFormat::namespace_id_hex() const { return namespace_id(*this).to_hex(); }

void encode_chunk_header(const ChunkFormat& format, const ChunkKey& key,
                         std::span<const uint8_t> payload, std::span<uint8_t, kHeaderBytes> out) {
  uint8_t* h = out.data();
  std::memset(h, 0, kHeaderBytes);
  std::memcpy(h + kMagicOff, kMagic, sizeof(kMagic));
  put_u32(h + kVersionOff, kChunkFormatVersion);
  put_u32(h + kHeaderBytesOff, static_cast<uint32_t>(kHeaderBytes));
  put_hash(h + kNamespaceOff, namespace_id(format));
  put_hash(h + kKeyOff, key);
  put_u64(h + kPayloadBytesOff, payload.size());
  put_u64(h + kPayloadChecksumOff, XXH3_64bits(payload.data(), payload.size()));
  h[kDtypeOff] = static_cast<uint8_t>(format.kv_dtype);
  put_u64(h + kHeaderChecksumOff, XXH3_64bits(h, kHeaderChecksumOff));
}

StatusOr<ChunkHeader> decode_chunk_header(const ChunkFormat& format, const ChunkKey& key,
                                          std::span<const uint8_t> header) {
  if (header.size() < static_cast<size_t>(kHeaderBytes)) {
    return data_loss("chunk header: " + std::to_string(header.size()) + " bytes; expected " +
                     std::to_string(kHeaderBytes));
  }
  const uint8_t* h = header.data();
  if (std::memcmp(h + kMagicOff, kMagic, sizeof(kMagic)) != 0) {
    return data_loss("chunk header: bad magic; not a Strata KV chunk");
  }
  const uint32_t version = get_u32(h + kVersionOff);
  if (version != kChunkFormatVersion) {
    return data_loss("chunk header: format_version mismatch: file has " + std::to_string(version) +
                     ", expected " + std::to_string(kChunkFormatVersion));
  }
  const uint32_t header_bytes = get_u32(h + kHeaderBytesOff);
  if (header_bytes != kHeaderBytes) {
    return data_loss("chunk header: header_bytes mismatch: file has " +
                     std::to_string(header_bytes) + ", expected " + std::to_string(kHeaderBytes));
  }
  const uint64_t stored_checksum = get_u64(h + kHeaderChecksumOff);
  const uint64_t checksum = XXH3_64bits(h, kHeaderChecksumOff);
  if (stored_checksum != checksum) {
    return data_loss("chunk header: header checksum mismatch (corrupt header)");
  }
  ChunkHeader out;
  out.namespace_id = get_hash(h + kNamespaceOff);
  out.key = get_hash(h + kKeyOff);
  out.payload_bytes = get_u64(h + kPayloadBytesOff);
  out.payload_checksum = get_u64(h + kPayloadChecksumOff);
  const uint8_t dtype = h[kDtypeOff];
  if (dtype != static_cast<uint8_t>(format.kv_dtype)) {
    tensor::KvCacheDtype stored{};
    const bool known = dtype <= static_cast<uint8_t>(tensor::KvCacheDtype::kFp8E5M2);
    if (known) stored = static_cast<tensor::KvCacheDtype>(dtype);
    return data_loss(std::string("chunk header: kv_dtype mismatch: file has ") +
                     (known ? tensor::kv_cache_dtype_name(stored) : std::to_string(dtype).c_str()) +
                     ", expected " + tensor::kv_cache_dtype_name(format.kv_dtype));
  }
  const kv::BlockHash expected_ns = namespace_id(format);
  if (!(out.namespace_id == expected_ns)) {
    return data_loss("chunk header: namespace mismatch: file has " + out.namespace_id.to_hex() +
                     ", expected " + expected_ns.to_hex() + " (another model or KV format)");
  }
  if (!(out.key == key)) {
    return data_loss("chunk header: key mismatch: file has " + out.key.to_hex() + ", expected " +
                     key.to_hex());
  }
  const uint64_t expected_bytes = static_cast<uint64_t>(format.payload_bytes());
  if (out.payload_bytes != expected_bytes) {
    return data_loss("chunk header: payload_bytes mismatch: file has " +
                     std::to_string(out.payload_bytes) + ", expected " +
                     std::to_string(expected_bytes));
  }
  return out;
}

Status verify_chunk_payload(const ChunkHeader& header, std::span<const uint8_t> payload) {
  if (payload.size() != header.payload_bytes) {
    return data_loss("chunk payload: " + std::to_string(payload.size()) + " bytes; header says " +
                     std::to_string(header.payload_bytes));
  }
  if (XXH3_64bits(payload.data(), payload.size()) != header.payload_checksum) {
    return data_loss("chunk payload: checksum mismatch (corrupt payload) for key " +
                     header.key.to_hex());
  }
  return Status::ok_status();
}

}  // namespace strata::offload
