// AWS Signature Version 4 for S3 requests (header-based authentication), on
// OpenSSL's SHA-256 and HMAC. The object-store tier signs every request with
// it; we do not use curl's CURLOPT_AWS_SIGV4, which in Debian's curl 7.88
// neither sends x-amz-content-sha256 nor sorts and encodes the query.
//
// Steps (AWS "Signature Version 4 signing process"):
//   canonical request = METHOD \n canonical URI \n canonical query \n
//                       canonical headers \n signed headers \n payload hash
//   string to sign    = "AWS4-HMAC-SHA256" \n amz_date \n scope \n hex(SHA256(canonical request))
//   scope             = yyyymmdd/region/service/aws4_request
//   signing key       = HMAC chain "AWS4"+secret → date → region → service → "aws4_request"
//   Authorization     = AWS4-HMAC-SHA256 Credential=<access key>/<scope>,
//                       SignedHeaders=<signed headers>,Signature=<hex HMAC(key, string to sign)>
//
// S3 rules followed here: the URI path is percent-encoded once (not twice, not
// normalized), '/' kept; query names and values are percent-encoded ('/'
// too) and sorted; every header given is signed, names lower-cased, values
// trimmed with inner runs of spaces collapsed; x-amz-content-sha256 carries the
// hex SHA-256 of the body (so servers can check it).
//
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::offload::sigv4 {

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // temporary credentials; empty if none
};

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;          // "GET", "PUT", "HEAD", "DELETE"
  std::string path;            // decoded, starting with '/': "/bucket/dir/key name.kv"
  Pairs query;                 // decoded names and values, any order
  Pairs headers;               // must include "host"; any case, any order
  std::string payload_sha256;  // hex; sha256_hex of the body ("" body: kEmptySha256)
};

// Everything signing produced, in order (the intermediate strings for tests
// and for debugging a SignatureDoesNotMatch).
struct Signed {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // 64 hex digits
  std::string authorization;  // value of the Authorization header
  // Headers to send besides the request's own: x-amz-date,
  // x-amz-content-sha256, x-amz-security-token (if any), Authorization.
  Pairs added_headers;
};

inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string sha256_hex(std::span<const uint8_t> bytes);
// SHA-256 of several pieces as if concatenated (a chunk's header + payload).
std::string sha256_hex(std::span<const std::span<const uint8_t>> pieces);
std::array<uint8_t, 32> hmac_sha256(std::span<const uint8_t> key, std::string_view data);
std::string to_hex(std::span<const uint8_t> bytes);

// Percent-encodes every byte but A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash).
std::string uri_encode(std::string_view text, bool keep_slash);

std::string canonical_query(const Pairs& query);
// "name:value\n" lines, sorted by lower-case name; and "a;b;c".
std::string canonical_headers(const Pairs& headers);
std::string signed_header_names(const Pairs& headers);
std::string canonical_request(const Request& request);

// "yyyymmddThhmmssZ" for a Unix time (UTC).
std::string amz_date(int64_t unix_seconds);

std::array<uint8_t, 32> signing_key(std::string_view secret_key, std::string_view date,
                                    std::string_view region, std::string_view service);

// Signs `request` at `amz_date` ("yyyymmddThhmmssZ"). The x-amz-date,
// x-amz-content-sha256 and (with a session token) x-amz-security-token
// headers are added to the signed set; `request.headers` must not hold them.
Signed sign(const Request& request, const Credentials& credentials, std::string_view region,
            std::string_view service, std::string_view amz_date);

}  // namespace strata::offload::sigv4
