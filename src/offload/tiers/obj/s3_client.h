// The few S3 REST operations the object-store tier needs (HEAD, GET, PUT,
// DELETE an object; ListObjectsV2 as a startup probe), over libcurl, each
// request signed with SigV4 (sigv4.h). Path-style URLs only:
// <scheme>://<host[:port]>/<bucket>/<key>, which every S3-compatible server
// (MinIO, Ceph RGW, s3rver, AWS) accepts.
//
// Transport: an S3Connection is a libcurl connection cache (a share handle);
// each request runs on a fresh easy handle attached to it, so a thread that
// reuses one S3Connection reuses its TCP connection but no per-transfer state.
// (Reusing one easy handle with curl_easy_reset was a use-after-free inside
// Debian's libcurl 7.88.1: header-parsing state survives the reset, and a
// folded header line at the start of the next response read freed memory;
// found by fuzz_s3_response.) S3ConnectionPool lends handles to I/O threads
// (at most one per concurrent request, so one per I/O thread in practice).
// Every request has a connect timeout and a total timeout; nothing waits
// longer. Bodies move directly between the caller's buffers and the socket
// (GET fills the given pieces in order; PUT sends them in order).
//
// Errors: a request that fails in transport (refused, timed out, cut short)
// or gets a non-2xx answer returns an S3Response whose ok() is false;
// describe() turns it into one line with the S3 error code and message from
// the XML body when there is one.
//
// Threads: S3Client is immutable after construction and safe to share; an
// S3Connection is used by one thread at a time; S3ConnectionPool is
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "offload/tiers/obj/sigv4.h"

namespace strata::offload {

struct S3Endpoint {
  std::string scheme;     // "http" | "https"
  std::string authority;  // host[:port] as sent in Host (default ports dropped)
  std::string base_url() const { return scheme + "://" + authority; }
};

// "http://127.0.0.1:9000", "https://s3.example.com", or "host:port" with
// `default_scheme`. A trailing '/' is allowed; any other path is an error.
StatusOr<S3Endpoint> parse_s3_endpoint(const std::string& endpoint,
                                       const std::string& default_scheme);

struct S3ClientConfig {
  S3Endpoint endpoint;
  std::string bucket;
  std::string region = "us-east-1";
  sigv4::Credentials credentials;
  std::string ca_bundle;  // CA file for https; empty = the system's
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 30000;
};

struct S3Response {
  bool is_transport_error = false;  // no complete HTTP answer (see transport_error)
  bool is_truncated = false;        // the body ended before its Content-Length
  bool is_body_too_long = false;    // GET: more bytes than the pieces hold (transfer aborted)
  std::string transport_error;      // curl's message
  long http_status = 0;
  std::string error_code;       // S3 <Code> ("NoSuchBucket"), or "" when absent
  std::string error_message;    // S3 <Message>
  int64_t content_length = -1;  // from the response headers; -1 if none
  int64_t body_bytes = 0;       // body bytes received (GET)
  int64_t new_connections = 0;  // connections opened for this request (0 = kept alive)
  std::string body;             // text bodies only (list, errors), at most 64 KiB

  bool ok() const { return !is_transport_error && http_status >= 200 && http_status < 300; }
  // "HTTP 403 SignatureDoesNotMatch: The request signature ..." or
  // "connection failed: Failed to connect to 127.0.0.1 port 9 ...".
  std::string describe() const;
};

// One libcurl connection cache. Not thread-safe: one request at a time.
class S3Connection {
 public:
  S3Connection();
  ~S3Connection();
  S3Connection(const S3Connection&) = delete;
  S3Connection& operator=(const S3Connection&) = delete;

  void* share() const { return share_; }

 private:
  void* share_;  // CURLSH* sharing CURL_LOCK_DATA_CONNECT
};

class S3Client {
 public:
  explicit S3Client(S3ClientConfig config);

  const S3ClientConfig& config() const { return config_; }

  S3Response head_object(S3Connection& conn, const std::string& key) const;
  // Fills `pieces` in order with the object's bytes. A body longer than the
  // pieces' total fails (body_bytes counts what fitted); a shorter one
  // returns ok() with body_bytes < total, which the caller must check.
  S3Response get_object(S3Connection& conn, const std::string& key,
                        std::span<const std::span<uint8_t>> pieces) const;
  // Uploads the concatenation of `pieces` (Content-Length, signed SHA-256).
  S3Response put_object(S3Connection& conn, const std::string& key,
                        std::span<const std::span<const uint8_t>> pieces) const;
  S3Response delete_object(S3Connection& conn, const std::string& key) const;
  // ListObjectsV2 (?list-type=2&max-keys=N&prefix=P) with the XML in body.
  S3Response list_objects(S3Connection& conn, const std::string& prefix, int max_keys) const;

 private:
  struct Transfer;
  S3Response perform(S3Connection& conn, const Transfer& transfer) const;

  const S3ClientConfig config_;
};

// Idle connections for reuse; thread-safe. acquire() hands out an idle one or
// a new one; the Lease gives it back when destroyed.
class S3ConnectionPool {
 public:
  class Lease {
   public:
    Lease(S3ConnectionPool& pool, std::unique_ptr<S3Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    ~Lease() { pool_.release(std::move(conn_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    S3Connection& operator*() const { return *conn_; }

   private:
    S3ConnectionPool& pool_;
    std::unique_ptr<S3Connection> conn_;
  };

  Lease acquire();
  void release(std::unique_ptr<S3Connection> conn);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<S3Connection>> idle_;
};

}  // namespace strata::offload
