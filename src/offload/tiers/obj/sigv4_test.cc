#include "offload/tiers/obj/sigv4.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::offload::sigv4 {
namespace {

// Views a string literal's bytes (not a temporary's).
std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// AWS's published example "GET Object" (S3 API reference, "Example: GET
// Object" under header-based SigV4 authentication): the first 10 bytes of
// examplebucket/test.txt, signed on 2013-05-24 with the documentation's
// example key pair.
TEST(SigV4, AwsGetObjectExample) {
  Request req;
  req.method = "GET";
  req.path = "/test.txt";
  req.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  req.payload_sha256 = std::string(kEmptySha256);
  const Credentials creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};

  const Signed s = sign(req, creds, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(s.canonical_request,
            "GET\n/test.txt\n\n"
            "host:examplebucket.s3.amazonaws.com\n"
            "range:bytes=0-9\n"
            "x-amz-content-sha256:"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\n"
            "host;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  ASSERT_EQ(s.added_headers.size(), 3u);  // date, content hash, Authorization; no token
  EXPECT_EQ(s.added_headers[0],
            (std::pair<std::string, std::string>("x-amz-date", "20130524T000000Z")));
  EXPECT_EQ(s.added_headers[2].first, "Authorization");
}

TEST(SigV4, SessionTokenIsSentAndSigned) {
  Request req{"HEAD", "/b/k", {}, {{"host", "h"}}, std::string(kEmptySha256)};
  const Signed s =
      sign(req, {"AK", "SK", "token/with+chars"}, "us-east-1", "s3", "20240101T120000Z");
  EXPECT_NE(s.canonical_request.find("x-amz-security-token:token/with+chars\n"), std::string::npos);
  EXPECT_NE(s.authorization.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                                 "x-amz-security-token,"),
            std::string::npos);
  EXPECT_EQ(s.added_headers[2],
            (std::pair<std::string, std::string>("x-amz-security-token", "token/with+chars")));
}

TEST(SigV4, UriEncodingKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(uri_encode("AZaz09-._~", false), "AZaz09-._~");
  EXPECT_EQ(uri_encode("a b/c+d=e", true), "a%20b/c%2Bd%3De");
  EXPECT_EQ(uri_encode("a b/c+d=e", false), "a%20b%2Fc%2Bd%3De");
  EXPECT_EQ(uri_encode("ü*!'()", true), "%C3%BC%2A%21%27%28%29");
}

TEST(SigV4, QueryIsEncodedAndSortedByName) {
  EXPECT_EQ(canonical_query({{"prefix", "a/b c"}, {"max-keys", "1"}, {"list-type", "2"}}),
            "list-type=2&max-keys=1&prefix=a%2Fb%20c");
  EXPECT_EQ(canonical_query({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(canonical_query({}), "");
}

TEST(SigV4, HeadersAreLowerCasedTrimmedSortedAndMerged) {
  const Pairs headers = {{"X-Amz-Meta-B", "  two   words  "},
                         {"Host", "h:9000"},
                         {"x-amz-meta-a", "1"},
                         {"X-AMZ-META-A", "2"}};
  EXPECT_EQ(canonical_headers(headers), "host:h:9000\nx-amz-meta-a:1,2\nx-amz-meta-b:two words\n");
  EXPECT_EQ(signed_header_names(headers), "host;x-amz-meta-a;x-amz-meta-b");
}

TEST(SigV4, HashesAndDates) {
  EXPECT_EQ(sha256_hex(bytes_of("")), kEmptySha256);
  EXPECT_EQ(sha256_hex(bytes_of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::span<const uint8_t> pieces[3] = {bytes_of("a"), bytes_of(""), bytes_of("bc")};
  EXPECT_EQ(sha256_hex(pieces), sha256_hex(bytes_of("abc")));
  EXPECT_EQ(amz_date(0), "19700101T000000Z");
  EXPECT_EQ(amz_date(1369353600), "20130524T000000Z");
  EXPECT_EQ(amz_date(1700000000), "20231114T221320Z");
}

}  // namespace
}  // namespace strata::offload::sigv4
