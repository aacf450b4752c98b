// The object-store tier: chunks as objects in an S3-compatible bucket (AWS S3,
// MinIO, Ceph RGW, s3rver) that any number of Strata instances share, so a
// new replica warm-starts from what the others computed.
//
// Layout (hex = ChunkKey::to_hex(), 32 digits; prefix used verbatim, so end
// it with '/' to get a folder):
//   <bucket>/<prefix><ChunkFormat::namespace_id_hex()>/<hex>.kv
// Each object = ChunkHeader + payload (chunk_format.h), byte for byte what the
// filesystem tier writes to <hex>.kv, so chunks move between the two tiers by
// copying. Requests are path-style, signed with SigV4 (sigv4.h), over libcurl
// with keep-alive (s3_client.h).
//
// Startup (make_obj_tier): one signed ListObjectsV2 (max-keys=1) on the
// namespace prefix proves the endpoint is reachable, the credentials are
// accepted and the bucket exists; otherwise it fails at once with a message
// that says which (unreachable, wrong secret, unknown access key, no such
// bucket, access denied). Unreachable and 5xx are kUnavailable (they may
// pass: the connector starts the tier down and retries, retrying_tier.h);
// the others are settings to fix.
//
// Store: PUT of header + payload (x-amz-content-sha256 = its SHA-256).
// Skipped, reported ok, for keys known to be present or already being
// stored. A key another process stored is overwritten with the same bytes
// (content-addressed): a HEAD first would cost a round trip per new chunk.
//
// Load: GET into a header buffer and the host slot, then the header fields and
// payload checksum are verified. A failure (absent, refused, timed out, 5xx,
// body cut short, wrong size, corrupt) reports the key not ok, counts a load
// failure and forgets the key (the next lookup says kMiss). An object that
// arrived whole but is the wrong size or fails verification is deleted so a
// later store replaces it; one whose transfer was cut short is left alone.
//
// Lookup: answered from memory (keys this process stored, loaded or found,
// and recent negative answers); unknown keys are probed with HEAD on an I/O
// thread (kRetry until the answer arrives). Negative answers, including
// probes that failed (5xx, timeout, unreachable: also counted in
// probe_failures), expire after miss_ttl_ms so chunks stored meanwhile by
// other instances are found; each probe's answer is delivered at least once.
// A key whose store is in flight answers kRetry.
//
// Removals (take_removed, for KV events): keys forgotten after a failed
// load (absent, corrupt: the object is gone or deleted).
//
// Capacity: unbounded here; size the bucket with the store's own lifecycle
// rules. used_bytes / num_chunks count the objects this process knows of.
//
// Timeouts: every request gives up after connect_timeout_ms to connect and
// request_timeout_ms in all, so a dead or hung server turns into failed jobs
// (misses) within those bounds, never a stuck engine.
//
// Credentials: access_key / secret_key / session_token from the config when
// access_key is set there, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN, read once at startup (temporary credentials are not
// refreshed; there is no instance-profile or SSO lookup). Region: the
// config's, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
//
// Threads: io_threads I/O threads (half prefer loads and probes, the rest
// stores; each helps with the other queue when idle), each with its own
// libcurl handle. Public methods: engine thread, except stats() (any thread);
// they only take a short lock and queue work, never touching the network.
// The destructor waits for every queued job (each bounded by the timeouts),
// then joins the threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

struct ObjTierConfig {
  std::string bucket;
  std::string endpoint;         // "http://127.0.0.1:9000" (vLLM's endpoint_override)
  std::string scheme = "http";  // used when endpoint has no scheme://
  std::string region;           // "" = environment or us-east-1 (above)
  std::string access_key;       // "" = environment (above)
  std::string secret_key;
  std::string session_token;
  std::string ca_bundle;  // CA certificates file for https; "" = the system's
  std::string prefix;     // prepended verbatim to every object name
  int io_threads = 4;
  int64_t miss_ttl_ms = 1000;
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 30000;
};

// Validates the config, resolves credentials and region, and probes the
// bucket (see above). Errors name the setting or the server's answer:
//   "obj tier: bucket 'kv' does not exist at http://127.0.0.1:9000 (HTTP 404 NoSuchBucket ...)"
StatusOr<std::unique_ptr<SecondaryTier>> make_obj_tier(const ObjTierConfig& config,
                                                       const ChunkFormat& format,
                                                       const HostRegion& region);

// Object name of `key` for `format` under `prefix` (tests, tools).
std::string obj_tier_object_name(const std::string& prefix, const ChunkFormat& format,
                                 const ChunkKey& key);

}  // namespace strata::offload
