#include "offload/tiers/obj/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "base/check.h"

namespace strata::offload::sigv4 {
namespace {

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

// Trims and collapses inner runs of spaces/tabs to one space.
std::string normalize_value(std::string_view v) {
  std::string out;
  bool is_pending_space = false;
  for (char c : v) {
    if (is_space(c)) {
      is_pending_space = !out.empty();
      continue;
    }
    if (is_pending_space) out += ' ';
    is_pending_space = false;
    out += c;
  }
  return out;
}

// (lower-case name, normalized value) sorted by name; repeated names joined
// with ',' in the order given.
Pairs normalized_headers(const Pairs& headers) {
  Pairs out;
  for (const auto& [name, value] : headers) out.emplace_back(lower(name), normalize_value(value));
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Pairs merged;
  for (auto& h : out) {
    if (!merged.empty() && merged.back().first == h.first) {
      merged.back().second += "," + h.second;
    } else {
      merged.push_back(std::move(h));
    }
  }
  return merged;
}

}  // namespace

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::span<const std::span<const uint8_t>> pieces) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  STRATA_CHECK(ctx != nullptr) << "EVP_MD_CTX_new failed";
  STRATA_CHECK(EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1);
  for (std::span<const uint8_t> p : pieces) {
    STRATA_CHECK(EVP_DigestUpdate(ctx, p.data(), p.size()) == 1);
  }
  std::array<uint8_t, 32> digest;
  unsigned int len = 0;
  STRATA_CHECK(EVP_DigestFinal_ex(ctx, digest.data(), &len) == 1 && len == digest.size());
  EVP_MD_CTX_free(ctx);
  return to_hex(digest);
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  const std::span<const uint8_t> pieces[1] = {bytes};
  return sha256_hex(pieces);
}

std::array<uint8_t, 32> hmac_sha256(std::span<const uint8_t> key, std::string_view data) {
  std::array<uint8_t, 32> out;
  unsigned int len = 0;
  const uint8_t* made =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const uint8_t*>(data.data()), data.size(), out.data(), &len);
  STRATA_CHECK(made != nullptr && len == out.size()) << "HMAC-SHA256 failed";
  return out;
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool is_unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                               (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                               c == '~' || (keep_slash && c == '/');
    if (is_unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

std::string canonical_query(const Pairs& query) {
  Pairs encoded;
  for (const auto& [name, value] : query) {
    encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

std::string canonical_headers(const Pairs& headers) {
  std::string out;
  for (const auto& [name, value] : normalized_headers(headers)) out += name + ":" + value + "\n";
  return out;
}

std::string signed_header_names(const Pairs& headers) {
  std::string out;
  for (const auto& h : normalized_headers(headers)) out += (out.empty() ? "" : ";") + h.first;
  return out;
}

std::string canonical_request(const Request& request) {
  return request.method + "\n" + uri_encode(request.path, true) + "\n" +
         canonical_query(request.query) + "\n" + canonical_headers(request.headers) + "\n" +
         signed_header_names(request.headers) + "\n" + request.payload_sha256;
}

std::string amz_date(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

std::array<uint8_t, 32> signing_key(std::string_view secret_key, std::string_view date,
                                    std::string_view region, std::string_view service) {
  const std::string k_secret = "AWS4" + std::string(secret_key);
  const std::array<uint8_t, 32> k_date = hmac_sha256(as_bytes(k_secret), date);
  const std::array<uint8_t, 32> k_region = hmac_sha256(k_date, region);
  const std::array<uint8_t, 32> k_service = hmac_sha256(k_region, service);
  return hmac_sha256(k_service, "aws4_request");
}

Signed sign(const Request& request, const Credentials& credentials, std::string_view region,
            std::string_view service, std::string_view amz_date) {
  STRATA_CHECK(amz_date.size() == 16) << "amz_date '" << amz_date << "' is not yyyymmddThhmmssZ";
  Signed out;
  out.added_headers.emplace_back("x-amz-date", std::string(amz_date));
  out.added_headers.emplace_back("x-amz-content-sha256", request.payload_sha256);
  if (!credentials.session_token.empty()) {
    out.added_headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  Request full = request;
  full.headers.insert(full.headers.end(), out.added_headers.begin(), out.added_headers.end());

  const std::string date(amz_date.substr(0, 8));
  const std::string scope =
      date + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  out.canonical_request = canonical_request(full);
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + scope + "\n" +
                       sha256_hex(as_bytes(out.canonical_request));
  const std::array<uint8_t, 32> key = signing_key(credentials.secret_key, date, region, service);
  out.signature = to_hex(hmac_sha256(key, out.string_to_sign));
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key + "/" + scope +
                      ",SignedHeaders=" + signed_header_names(full.headers) +
                      ",Signature=" + out.signature;
  out.added_headers.emplace_back("Authorization", out.authorization);
  return out;
}

}  // namespace strata::offload::sigv4
