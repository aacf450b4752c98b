#include "offload/tiers/obj/obj_tier.h"

#include <array>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "offload/tiers/common/io_thread_pool.h"
#include "offload/tiers/obj/s3_client.h"
#include "offload/tiers/common/tier_bookkeeping.h"

namespace strata::offload {
namespace {

// Outcome of one chunk's load, decided on an I/O thread.
struct LoadOutcome {
  Status status;
  bool is_bad_object = false;  // arrived whole but can never load: delete it
};

// SecondaryTier over one namespace prefix of a bucket (behaviour in
// obj_tier.h). The engine thread and the I/O threads share the state below
// mu_; both hold it only for bookkeeping, never across a request.
class ObjTier final : public SecondaryTier {
 public:
  ObjTier(const ObjTierConfig& config, const ChunkFormat& format, const HostRegion& region,
          S3Client client, std::string ns_prefix, std::unique_ptr<S3Connection> probed)
      : config_(config),
        format_(format),
        region_(region),
        client_(std::move(client)),
        ns_prefix_(std::move(ns_prefix)),
        payload_bytes_(format.payload_bytes()),
        object_bytes_(kHeaderBytes + format.payload_bytes()),
        lookups_(config.miss_ttl_ms),
        jobs_((config.io_threads + 1) / 2, config.io_threads / 2) {
    connections_.release(std::move(probed));
  }

  ~ObjTier() override { drain(); }

  const std::string& name() const override { return name_; }

  LookupResult lookup(const ChunkKey& key) override {
    bool start_probe = false;
    LookupResult result;
    {
      std::lock_guard<std::mutex> lock(mu_);
      result = lookups_.answer(key, known_.count(key) != 0, stats_, &start_probe);
    }
    if (start_probe) jobs_.submit(IoThreadPool::Queue::kRead, [this, key] { run_probe(key); });
    return result;
  }

  void submit_store(TierJob job) override {
    auto state = make_job_state(std::move(job), region_);
    std::vector<size_t> to_put;
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_put = lookups_.claim_stores(
          *state, stats_, [this](const ChunkKey& key) { return known_.count(key) != 0; });
    }
    jobs_.run_store(std::move(state), to_put,
                    [this](TierJobState& s, size_t i) { run_store(s, i); });
  }

  void submit_load(TierJob job) override {
    jobs_.run_load(make_job_state(std::move(job), region_),
                   [this](TierJobState& s, size_t i) { run_load(s, i); });
  }

  std::vector<TierJobResult> poll_finished() override { return jobs_.poll_finished(); }

  void drain() override { jobs_.wait_idle(); }

  std::vector<ChunkKey> take_removed() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ChunkKey> out;
    out.swap(removed_);
    return out;
  }

  TierStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    TierStats out = stats_;
    jobs_.fill_seconds(out);
    out.tier = name_;
    out.num_chunks = static_cast<int64_t>(known_.size());
    out.used_bytes = out.num_chunks * object_bytes_;
    return out;
  }

 private:
  std::string object_name(const ChunkKey& key) const { return ns_prefix_ + key.to_hex() + ".kv"; }

  void add_known_locked(const ChunkKey& key) {
    lookups_.forget_miss(key);
    known_.insert(key);
  }

  // ---- I/O threads ----

  void run_probe(const ChunkKey& key) {
    S3Response r;
    {
      S3ConnectionPool::Lease conn = connections_.acquire();
      r = client_.head_object(*conn, object_name(key));
    }
    const bool is_present = r.ok() && r.content_length == object_bytes_;
    const bool is_failure = !r.ok() && (r.is_transport_error || r.http_status != 404);
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lookups_.end_probe(key, is_present);
      if (is_present) add_known_locked(key);
      if (is_failure) num_failures = ++stats_.probe_failures;
    }
    if (num_failures > 0 && should_log_failure(num_failures)) {
      STRATA_LOG(kWarning) << "obj tier: lookup of chunk " << key.to_hex()
                           << " failed (answered as a miss): " << r.describe() << " ("
                           << num_failures << " probe failures so far)";
    }
  }

  void run_store(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    const uint8_t* payload = region_.slot(state.job.slots[i]);
    std::array<uint8_t, kHeaderBytes> header;
    const std::span<const uint8_t> body(payload, static_cast<size_t>(payload_bytes_));
    encode_chunk_header(format_, key, body, header);
    const std::span<const uint8_t> pieces[2] = {header, body};
    S3Response r;
    {
      S3ConnectionPool::Lease conn = connections_.acquire();
      r = client_.put_object(*conn, object_name(key), pieces);
    }
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lookups_.end_store(key);
      if (r.ok()) {
        add_known_locked(key);
        stats_.store_bytes += payload_bytes_;
        state.bytes += payload_bytes_;
      } else {
        num_failures = ++stats_.store_failures;
      }
    }
    state.ok[i] = r.ok();
    if (num_failures > 0) warn_chunk_failure(name_, "store", key, r.describe(), num_failures);
  }

  void run_load(TierJobState& state, size_t i) {
    const ChunkKey& key = state.job.keys[i];
    const LoadOutcome outcome = load_object(key, region_.slot(state.job.slots[i]));
    if (outcome.is_bad_object) {
      S3ConnectionPool::Lease conn = connections_.acquire();
      client_.delete_object(*conn, object_name(key));  // best effort; a store will replace it
    }
    int64_t num_failures = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (outcome.status.ok()) {
        add_known_locked(key);
        stats_.load_bytes += payload_bytes_;
        stats_.hit_tokens += format_.tokens_per_chunk();
        state.bytes += payload_bytes_;
      } else {
        num_failures = ++stats_.load_failures;
        if (known_.erase(key) != 0) removed_.push_back(key);  // for BlockRemoved events
        lookups_.remember_miss(key);
      }
    }
    state.ok[i] = outcome.status.ok();
    warn_chunk_failure(
        name_, "load", key,
        outcome.status.message() + (outcome.is_bad_object ? " (object deleted)" : ""),
        num_failures);
  }

  // GETs `key`'s object into a header buffer and `slot` and verifies it.
  LoadOutcome load_object(const ChunkKey& key, uint8_t* slot) {
    const std::string name = object_name(key);
    std::array<uint8_t, kHeaderBytes> header;
    const std::span<uint8_t> payload(slot, static_cast<size_t>(payload_bytes_));
    const std::span<uint8_t> pieces[2] = {header, payload};
    S3Response r;
    {
      S3ConnectionPool::Lease conn = connections_.acquire();
      r = client_.get_object(*conn, name, pieces);
    }
    if (r.is_body_too_long) {
      return {
          data_loss("'" + name + "' is longer than " + std::to_string(object_bytes_) + " bytes"),
          true};
    }
    if (!r.ok()) {
      const bool is_absent = !r.is_transport_error && r.http_status == 404;
      return {is_absent ? not_found("no object '" + name + "'")
                        : unavailable("GET '" + name + "': " + r.describe()),
              false};
    }
    if (r.body_bytes != object_bytes_) {
      return {data_loss("'" + name + "' has " + std::to_string(r.body_bytes) + " bytes; expected " +
                        std::to_string(object_bytes_)),
              true};
    }
    StatusOr<ChunkHeader> decoded = decode_chunk_header(format_, key, header);
    if (!decoded.ok()) return {decoded.status().with_prefix(name), true};
    Status verified = verify_chunk_payload(*decoded, payload);
    if (!verified.ok()) return {verified.with_prefix(name), true};
    return {Status::ok_status(), false};
  }

  const ObjTierConfig config_;
  const ChunkFormat format_;
  const HostRegion region_;
  const std::string name_ = "obj";
  const S3Client client_;
  const std::string ns_prefix_;  // "<prefix><namespace id>/"
  const int64_t payload_bytes_;
  const int64_t object_bytes_;
  S3ConnectionPool connections_;

  mutable std::mutex mu_;
  ChunkKeySet known_;  // objects known to exist
  std::vector<ChunkKey> removed_;  // left known_ since the last take_removed()
  ProbedLookups lookups_;
  TierStats stats_;  // but load/store_seconds, which jobs_ keeps

  // Last: destroyed (threads joined) before the state above.
  TierJobs jobs_;
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::string(v) : fallback;
}

StatusOr<sigv4::Credentials> resolve_credentials(const ObjTierConfig& config) {
  if (!config.access_key.empty()) {
    if (config.secret_key.empty()) {
      return invalid_argument("obj tier: access_key is set but secret_key is empty");
    }
    return sigv4::Credentials{config.access_key, config.secret_key, config.session_token};
  }
  if (!config.secret_key.empty() || !config.session_token.empty()) {
    return invalid_argument("obj tier: secret_key or session_token is set but access_key is empty");
  }
  sigv4::Credentials env{env_or("AWS_ACCESS_KEY_ID", ""), env_or("AWS_SECRET_ACCESS_KEY", ""),
                         env_or("AWS_SESSION_TOKEN", "")};
  if (env.access_key.empty() || env.secret_key.empty()) {
    return invalid_argument(
        "obj tier: no credentials: set access_key and secret_key in the tier config, or "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment");
  }
  return env;
}

Status validate_config(const ObjTierConfig& config, const ChunkFormat& format,
                       const HostRegion& region) {
  if (config.bucket.empty() || config.bucket.find_first_of("/ ") != std::string::npos) {
    return invalid_argument("obj tier: bucket '" + config.bucket +
                            "' must be a non-empty bucket name without '/' or spaces");
  }
  if (config.endpoint.empty()) {
    return invalid_argument(
        "obj tier: endpoint_override is empty; set it to the S3 server's URL, e.g. "
        "http://127.0.0.1:9000");
  }
  if (config.io_threads < 1) {
    return invalid_argument("obj tier: io_threads " + std::to_string(config.io_threads) +
                            "; need at least 1");
  }
  if (config.miss_ttl_ms < 0 || config.connect_timeout_ms < 1 || config.request_timeout_ms < 1) {
    return invalid_argument("obj tier: miss_ttl_ms " + std::to_string(config.miss_ttl_ms) +
                            ", connect_timeout_ms " + std::to_string(config.connect_timeout_ms) +
                            ", request_timeout_ms " + std::to_string(config.request_timeout_ms) +
                            "; timeouts must be >= 1 and the ttl >= 0");
  }
  return check_format_and_region("obj", format, region);
}

// Turns the startup probe's answer into a message that says what to fix.
Status probe_error(const S3ClientConfig& c, const S3Response& r) {
  const std::string url = c.endpoint.base_url();
  const std::string bucket = "bucket '" + c.bucket + "'";
  const std::string answer = " (" + r.describe() + ")";
  if (r.is_transport_error) {
    return unavailable("obj tier: cannot reach " + url + ": " + r.transport_error +
                       "; is the S3 server running and endpoint_override right?");
  }
  if (r.error_code == "SignatureDoesNotMatch") {
    return invalid_argument("obj tier: " + url + " rejected the request signature" + answer +
                            ": the secret key is wrong for access key '" +
                            c.credentials.access_key +
                            "' (secret_key or AWS_SECRET_ACCESS_KEY), or region '" + c.region +
                            "' is not the bucket's");
  }
  if (r.error_code == "InvalidAccessKeyId") {
    return invalid_argument("obj tier: access key '" + c.credentials.access_key +
                            "' is not known to " + url + answer +
                            "; check access_key or AWS_ACCESS_KEY_ID");
  }
  if (r.error_code == "NoSuchBucket" || r.http_status == 404) {
    return not_found("obj tier: " + bucket + " does not exist at " + url + answer +
                     "; create it first");
  }
  if (r.http_status == 403) {
    return invalid_argument("obj tier: access to " + bucket + " at " + url + " denied" + answer +
                            "; the credentials need s3:ListBucket, s3:GetObject, s3:PutObject");
  }
  return unavailable("obj tier: probing " + bucket + " at " + url + " failed" + answer);
}

}  // namespace

std::string obj_tier_object_name(const std::string& prefix, const ChunkFormat& format,
                                 const ChunkKey& key) {
  return prefix + format.namespace_id_hex() + "/" + key.to_hex() + ".kv";
}

StatusOr<std::unique_ptr<SecondaryTier>> make_obj_tier(const ObjTierConfig& config,
                                                       const ChunkFormat& format,
                                                       const HostRegion& region) {
  STRATA_RETURN_IF_ERROR(validate_config(config, format, region));
  StatusOr<S3Endpoint> endpoint = parse_s3_endpoint(config.endpoint, config.scheme);
  if (!endpoint.ok()) return endpoint.status().with_prefix("obj tier: endpoint_override");
  S3ClientConfig client_config;
  client_config.endpoint = *endpoint;
  client_config.bucket = config.bucket;
  client_config.region = !config.region.empty()
                             ? config.region
                             : env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1"));
  STRATA_ASSIGN_OR_RETURN(client_config.credentials, resolve_credentials(config));
  client_config.ca_bundle = config.ca_bundle;
  client_config.connect_timeout_ms = config.connect_timeout_ms;
  client_config.request_timeout_ms = config.request_timeout_ms;

  S3Client client(client_config);
  const std::string ns_prefix = config.prefix + format.namespace_id_hex() + "/";
  auto conn = std::make_unique<S3Connection>();
  const S3Response probe = client.list_objects(*conn, ns_prefix, 1);
  if (!probe.ok()) return probe_error(client_config, probe);
  STRATA_LOG(kInfo) << "obj tier: " << client_config.endpoint.base_url() << "/" << config.bucket
                    << "/" << ns_prefix << ": reachable, " << config.io_threads << " I/O threads";
  return std::unique_ptr<SecondaryTier>(
      new ObjTier(config, format, region, std::move(client), ns_prefix, std::move(conn)));
}

}  // namespace strata::offload
