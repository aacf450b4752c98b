#include "offload/tiers/fs/fs_tier_config.h"

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
  STRATA_RETURN_IF_ERROR(parse_num_threads(r, "n_read_threads", &fs.n_read_threads));
  STRATA_RETURN_IF_ERROR(parse_num_threads(r, "n_write_threads", &fs.n_write_threads));
  STRATA_RETURN_IF_ERROR(r.optional_int("max_bytes", &fs.max_bytes, 0));
  STRATA_RETURN_IF_ERROR(r.optional_int("miss_ttl_ms", &fs.miss_ttl_ms, 0));
  STRATA_RETURN_IF_ERROR(parse_retrying_tier_keys(r, tier));
  return tier;
}

}  // namespace

// A filesystem that fails at startup (I/O error, damaged namespace) is retried.
TierType fs_tier_type() {
  return {.type = "fs", .settings_type = typeid(FsTierConfig), .parse = parse_fs_tier,
          .make = make_or_retry<FsTierConfig>("fs", make_fs_tier)};
}

}  // namespace strata::offload
