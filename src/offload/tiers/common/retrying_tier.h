// A secondary tier that could not start for a reason that may pass: the
// server starts anyway, with the tier down, and the tier is started again in
// the background until it comes up. A cache must never cause an outage.
//
//   start_tier_or_retry   runs the tier's factory once, on the caller's
//                         thread (startup). Success: the tier itself. An
//                         error that may pass (kUnavailable: a failing disk or
//                         mount, a damaged fs namespace that cannot be
//                         repaired, an object store that answered 5xx or could
//                         not be reached): a RetryingTier, down. Any other
//                         error (a wrong setting, wrong credentials, a missing
//                         bucket, a root that holds another format): returned,
//                         so startup fails fast.
//
// While down the tier answers every lookup kMiss (the tokens are recomputed),
// reports stores and loads not ok, and says is_up = false in its stats;
// start_failures counts failed starts. Each failed start is logged (the first
// ones, then at powers of two) with the error and the next delay. Delays
// double from initial_ms up to max_ms. Once the factory succeeds, the engine
// thread adopts the new tier at its next call and every call goes to it;
// counters of the down period stay in the stats.
//
// Threads: SecondaryTier methods on the engine thread, stats() on any; one
// background thread runs the factory (it may block on I/O there) and exits
// once the tier is up. The destructor stops that thread (waiting for a start
// in progress, bounded by the tier's own timeouts) and then drains the tier.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "offload/tiers/common/secondary_tier.h"

namespace strata::offload {

struct TierRetryConfig {
  int64_t initial_ms = 1000;
  int64_t max_ms = 60000;
};

using TierFactory = std::function<StatusOr<std::unique_ptr<SecondaryTier>>()>;

// True for start errors that may pass (kUnavailable).
bool is_transient_start_error(const Status& status);

// See above. `name` labels the tier while it is down ("fs", "obj").
StatusOr<std::unique_ptr<SecondaryTier>> start_tier_or_retry(const std::string& name,
                                                             TierFactory factory,
                                                             const TierRetryConfig& retry);

}  // namespace strata::offload
