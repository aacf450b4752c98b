// Test support (engine speculation tests): what speculation must do on a
// request, replayed over the plain greedy run's output, which greedy
// speculation reproduces token for token. Each step asks `propose` for
// drafts after the context so far (prompt + the output up to the step),
// counts how many of them the actual next tokens accept, tells the
// controller, and moves the context on by the accepted drafts plus the
// one token the verify step samples: the engine's steps, without the
// engine. For tests only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/engine_core.h"
#include "spec_decode/draft_controller.h"

namespace strata::engine::testing {

// propose(controller, context, room) -> drafts (at most room of them).
template <class Propose>
void replay_speculation(const EngineRequest& r, const std::vector<int32_t>& out,
                        int64_t max_model_len, spec_decode::DraftController& controller,
                        Propose propose, SpecDecodeStats& counts) {
  std::vector<int32_t> context = r.prompt_token_ids;
  context.push_back(out.at(0));
  size_t next = 1;  // out[next] is the token the next step must produce
  while (next < out.size()) {
    const int64_t room = std::min<int64_t>(max_model_len - static_cast<int64_t>(context.size()),
                                           r.stop.max_tokens - static_cast<int64_t>(next)) -
                         1;
    const std::vector<int32_t> d =
        room > 0 ? propose(controller, context, room) : std::vector<int32_t>{};
    size_t accepted = 0;
    while (accepted < d.size() && next + accepted < out.size() &&
           d[accepted] == out[next + accepted]) {
      ++accepted;
    }
    if (!d.empty()) {
      ++counts.num_drafts;
      counts.num_draft_tokens += static_cast<int64_t>(d.size());
      counts.num_accepted_tokens += static_cast<int64_t>(accepted);
      controller.on_verified(static_cast<int64_t>(d.size()), static_cast<int64_t>(accepted));
    }
    const size_t gained = std::min(accepted + 1, out.size() - next);
    context.insert(context.end(), out.begin() + next, out.begin() + next + gained);
    next += gained;
  }
}

}  // namespace strata::engine::testing
