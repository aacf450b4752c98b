#include "offload/tiers/plugin/plugin_tier.h"

#include <dlfcn.h>

#include "offload/tiers/plugin/strata_tier_plugin.h"

namespace strata::offload {
namespace {

strata_chunk_key to_c(const ChunkKey& k) { return {k.low, k.high}; }

class PluginTier : public SecondaryTier {
 public:
  PluginTier(std::string name, void* library, const strata_tier_vtable* vt, strata_tier* tier)
      : name_(std::move(name)), library_(library), vt_(vt), tier_(tier) {}
  ~PluginTier() override {
    vt_->drain(tier_);
    vt_->destroy(tier_);
    dlclose(library_);
  }

  const std::string& name() const override { return name_; }

  LookupResult lookup(const ChunkKey& key) override {
    switch (vt_->lookup(tier_, to_c(key))) {
      case STRATA_LOOKUP_HIT: return LookupResult::kHit;
      case STRATA_LOOKUP_RETRY: return LookupResult::kRetry;
      default: return LookupResult::kMiss;
    }
  }
  void submit_store(TierJob job) override { submit(job, vt_->submit_store); }
  void submit_load(TierJob job) override { submit(job, vt_->submit_load); }

  std::vector<TierJobResult> poll_finished() override {
    std::vector<TierJobResult> out;
    strata_tier_result results[64];
    size_t n = 0;
    do {
      n = vt_->poll_finished(tier_, results, 64);
      for (size_t i = 0; i < n; ++i) {
        const strata_tier_result& r = results[i];
        TierJobResult t{r.job_id, std::vector<bool>(r.num_keys), static_cast<int64_t>(r.bytes),
                        r.seconds};
        for (uint64_t k = 0; k < r.num_keys; ++k) t.ok[k] = r.ok[k] != 0;
        out.push_back(std::move(t));
      }
    } while (n == 64);
    return out;
  }

  void drain() override { vt_->drain(tier_); }

  TierStats stats() const override {
    strata_tier_stats s{};
    vt_->stats(tier_, &s);
    TierStats t;
    t.tier = name_;
    t.chunk_lookups = s.chunk_lookups;
    t.chunk_hits = s.chunk_hits;
    t.load_bytes = s.load_bytes;
    t.load_seconds = s.load_seconds;
    t.store_bytes = s.store_bytes;
    t.store_seconds = s.store_seconds;
    t.load_failures = s.load_failures;
    t.store_failures = s.store_failures;
    t.stores_skipped = s.stores_skipped;
    t.evictions = s.evictions;
    t.used_bytes = s.used_bytes;
    t.capacity_bytes = s.capacity_bytes;
    t.num_chunks = s.num_chunks;
    return t;
  }

 private:
  using SubmitFn = void (*)(strata_tier*, const strata_tier_job*);
  void submit(const TierJob& job, SubmitFn fn) {
    std::vector<strata_chunk_key> keys;
    keys.reserve(job.keys.size());
    for (const ChunkKey& k : job.keys) keys.push_back(to_c(k));
    const strata_tier_job c{job.job_id, keys.data(), job.slots.data(), keys.size()};
    fn(tier_, &c);
  }

  std::string name_;
  void* library_;
  const strata_tier_vtable* vt_;
  strata_tier* tier_;
};

}  // namespace

StatusOr<std::unique_ptr<SecondaryTier>> make_plugin_tier(const std::string& name,
                                                          const std::string& module_path,
                                                          const std::string& config_json,
                                                          const ChunkFormat& format,
                                                          const HostRegion& region) {
  const std::string what = "tier plugin '" + module_path + "'";
  void* library = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* e = dlerror();
    return invalid_argument("cannot load " + what + ": " + (e != nullptr ? e : "dlopen failed"));
  }
  auto fail = [&](Status s) {
    dlclose(library);
    return s;
  };
  auto entry = reinterpret_cast<strata_tier_entry_fn>(dlsym(library, STRATA_TIER_ENTRY_SYMBOL));
  if (entry == nullptr) {
    return fail(invalid_argument(what + " does not export " STRATA_TIER_ENTRY_SYMBOL "()"));
  }
  const strata_tier_vtable* vt = entry();
  if (vt == nullptr || vt->abi_version != STRATA_TIER_ABI_VERSION) {
    return fail(invalid_argument(
        what + " implements tier ABI version " + std::to_string(vt == nullptr ? 0 : vt->abi_version) +
        "; this Strata needs version " + std::to_string(STRATA_TIER_ABI_VERSION)));
  }
  if (!vt->create || !vt->destroy || !vt->lookup || !vt->submit_store || !vt->submit_load ||
      !vt->poll_finished || !vt->drain || !vt->stats) {
    return fail(invalid_argument(what + " leaves a required function of the vtable empty"));
  }
  const std::string ns_id = format.namespace_id_hex();
  const std::string ns = format.namespace_string();
  const strata_tier_init init{config_json.c_str(), ns_id.c_str(), ns.c_str(), region.base,
                              static_cast<uint64_t>(region.num_slots),
                              static_cast<uint64_t>(region.slot_bytes)};
  char error[512] = {0};
  strata_tier* tier = vt->create(&init, error, sizeof(error));
  if (tier == nullptr) {
    return fail(invalid_argument(what + " failed to start: " +
                                 (error[0] != '\0' ? std::string(error) : "no message")));
  }
  return std::unique_ptr<SecondaryTier>(new PluginTier(name, library, vt, tier));
}

}  // namespace strata::offload
