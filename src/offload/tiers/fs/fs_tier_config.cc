#include "offload/tiers/fs/fs_tier_config.h"

#include <algorithm>

#include "offload/tiers/fs/fs_tier.h"

namespace strata::offload {
namespace {

StatusOr<SecondaryTierConfig> parse_fs_tier(const config::JsonFields& r) {
  STRATA_RETURN_IF_ERROR(r.check_keys({"type", "root_dir", "n_read_threads", "n_write_threads",
                                       "max_bytes", "miss_ttl_ms", "locality",
                                       "enable_kv_events", "retry_initial_ms",
                                       "retry_max_ms"}));
  SecondaryTierConfig tier;
  FsTierConfig& fs = tier.emplace<FsTierConfig>();
  if (!r.has("root_dir")) return r.missing_error("root_dir", "a string");
  STRATA_RETURN_IF_ERROR(r.optional_string("root_dir", &fs.root_dir));
  if (fs.root_dir.empty()) return invalid_argument(r.name("root_dir") + " is empty");
  int64_t n = fs.n_read_threads;
  STRATA_RETURN_IF_ERROR(r.optional_int("n_read_threads", &n, 1));
  fs.n_read_threads = static_cast<int>(std::min<int64_t>(n, 256));
  n = fs.n_write_threads;
  STRATA_RETURN_IF_ERROR(r.optional_int("n_write_threads", &n, 1));
  fs.n_write_threads = static_cast<int>(std::min<int64_t>(n, 256));
  STRATA_RETURN_IF_ERROR(r.optional_int("max_bytes", &fs.max_bytes, 0));
  STRATA_RETURN_IF_ERROR(r.optional_int("miss_ttl_ms", &fs.miss_ttl_ms, 0));
  STRATA_RETURN_IF_ERROR(parse_retry_keys(r, tier));
  STRATA_RETURN_IF_ERROR(parse_tier_common_keys(r, tier));
  return tier;
}

// A filesystem that fails now (I/O error, damaged namespace) must not stop
// the server: the tier starts down and is retried. Wrong settings still fail.
StatusOr<std::unique_ptr<SecondaryTier>> make_tier(const SecondaryTierConfig& config,
                                                   const ChunkFormat& format,
                                                   const HostRegion& region) {
  return start_tier_or_retry(
      "fs", [fs = config.as<FsTierConfig>(), format, region] {
        return make_fs_tier(fs, format, region);
      },
      config.retry);
}

}  // namespace

TierType fs_tier_type() {
  return {.type = "fs", .settings_type = typeid(FsTierConfig), .parse = parse_fs_tier,
          .make = make_tier};
}

}  // namespace strata::offload
