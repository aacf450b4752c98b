// RenderLimits: bounds that keep a hostile or runaway template from
// exhausting memory or CPU during render(). Exceeding one yields a
// kResourceExhausted Status. Plain data; copy freely.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::chat_template {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // rendered text (and any one repeated string)
  int64_t max_steps = 10'000'000;              // loop iterations + calls + filter/test uses
  int max_call_depth = 100;                    // nested macro calls
  int64_t max_range = 100'000;                 // items from one range() (jinja2 sandbox's MAX_RANGE)
};

}  // namespace strata::chat_template
