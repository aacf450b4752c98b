#include "model/layers/moe.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace strata::model {
namespace {

// Rows per router matmul: within ops' decode regime, where a row's result does
// not depend on the rows around it.
constexpr int64_t kRouterRows = 16;

StatusOr<FusedLinear> load_gate_up(const WeightSource& w, const std::string& p, const char* gate,
                                   const char* up, int64_t intermediate, int64_t hidden) {
  return FusedLinear::load(
      w, {{p + gate + ".weight", intermediate}, {p + up + ".weight", intermediate}}, hidden);
}

// STRATA_MOE_SHARED_EXPERT: how a shared expert runs (fused, the default,
// or separate); an error names a value that is neither.
StatusOr<bool> shared_expert_mode_is_fused() {
  const char* env = std::getenv("STRATA_MOE_SHARED_EXPERT");
  if (env == nullptr || std::string_view(env).empty() || std::string_view(env) == "fused") {
    return true;
  }
  if (std::string_view(env) == "separate") return false;
  return invalid_argument(std::string("STRATA_MOE_SHARED_EXPERT=") + env +
                                  ": expected fused or separate");
}

// STRATA_MOE_DECODE: per-expert runs decode steps with one matmul dispatch
// per expert and projection, as prefill does (for measurement); grouped (the
// default) in one grouped pass.
StatusOr<bool> decode_grouped() {
  const char* env = std::getenv("STRATA_MOE_DECODE");
  if (env == nullptr || std::string_view(env).empty() || std::string_view(env) == "grouped") {
    return true;
  }
  if (std::string_view(env) == "per-expert") return false;
  return invalid_argument(std::string("STRATA_MOE_DECODE=") + env +
                          ": expected grouped or per-expert");
}

}  // namespace

StatusOr<MoeLayer> MoeLayer::load(const WeightSource& w, const std::string& prefix,
                                  const ArchitectureSpec& spec, const ModelConfig& c) {
  const MoeNames& names = spec.moe;
  const MoeConfig& moe = c.moe;
  MoeLayer layer;
  layer.hidden_ = c.hidden_size;
  layer.top_k_ = moe.num_experts_per_tok;
  layer.renormalize_ = names.always_renormalize || moe.norm_topk_prob;
  const std::string block = prefix + names.block + ".";
  STRATA_ASSIGN_OR_RETURN(layer.decode_grouped_, decode_grouped());
  STRATA_ASSIGN_OR_RETURN(layer.router_, load_linear(w, block + names.router + ".weight",
                                                     moe.num_experts, c.hidden_size));
  layer.experts_.resize(moe.num_experts);
  for (int64_t e = 0; e < moe.num_experts; ++e) {
    Expert& expert = layer.experts_[e];
    const std::string p = block + names.experts + "." + std::to_string(e) + ".";
    expert.intermediate = moe.moe_intermediate_size;
    STRATA_ASSIGN_OR_RETURN(expert.gate_up, load_gate_up(w, p, names.gate, names.up,
                                                         expert.intermediate, c.hidden_size));
    STRATA_ASSIGN_OR_RETURN(expert.down, load_linear(w, p + names.down + ".weight", c.hidden_size,
                                                     expert.intermediate));
    layer.all_fused_ = layer.all_fused_ && expert.gate_up.is_fused();
  }
  if (names.shared_expert && moe.shared_expert_intermediate_size > 0) {
    layer.has_shared_ = true;
    const std::string p = block + "shared_expert.";
    layer.shared_.intermediate = moe.shared_expert_intermediate_size;
    STRATA_ASSIGN_OR_RETURN(
        layer.shared_.gate_up,
        load_gate_up(w, p, "gate_proj", "up_proj", layer.shared_.intermediate, c.hidden_size));
    STRATA_ASSIGN_OR_RETURN(
        layer.shared_.down,
        load_linear(w, p + "down_proj.weight", c.hidden_size, layer.shared_.intermediate));
    STRATA_ASSIGN_OR_RETURN(layer.shared_gate_,
                            load_linear(w, block + "shared_expert_gate.weight", 1, c.hidden_size));
    STRATA_ASSIGN_OR_RETURN(layer.shared_fused_, shared_expert_mode_is_fused());
    layer.all_fused_ = layer.all_fused_ && layer.shared_.gate_up.is_fused();
  }
  return layer;
}

int64_t MoeLayer::active_weight_bytes() const {
  int64_t routed = 0;
  for (const Expert& e : experts_) routed += e.gate_up.size_bytes() + e.down.size_bytes();
  int64_t bytes = router_.size_bytes() + routed / num_experts() * top_k_;
  if (has_shared_) {
    bytes += shared_.gate_up.size_bytes() + shared_.down.size_bytes() + shared_gate_.size_bytes();
  }
  return bytes;
}

void MoeLayer::route(const ForwardContext& ctx, const float* in) const {
  Workspace& ws = ctx.workspace;
  const int64_t num_tokens = ctx.batch.num_tokens();
  const int64_t num_experts = this->num_experts();
  for (int64_t t = 0; t < num_tokens; t += kRouterRows) {
    const int64_t m = std::min(kRouterRows, num_tokens - t);
    ctx.backend.matmul(in + t * hidden_, m, router_, nullptr, ws.router_logits() + t * num_experts);
    if (has_shared_) {
      ctx.backend.matmul(in + t * hidden_, m, shared_gate_, nullptr, ws.shared_gate() + t);
    }
  }
  ctx.backend.moe_route(ws.router_logits(), num_tokens, num_experts, top_k_, renormalize_,
                        ws.routed_experts(), ws.routed_weights());
}

void MoeLayer::run_expert(const ForwardContext& ctx, const Expert& expert, int64_t n) const {
  Workspace& ws = ctx.workspace;
  const int64_t inter = expert.intermediate;
  expert.gate_up.forward(ctx.backend, ws.expert_rows(), n, nullptr, ws.gate_up(),
                         ws.split_scratch());
  for (int64_t r = 0; r < n; ++r) {
    const float* row = ws.gate_up() + r * 2 * inter;
    ctx.backend.silu_mul(row, row + inter, inter, ws.act() + r * inter);
  }
  ctx.backend.matmul(ws.act(), n, expert.down, nullptr, ws.expert_out());
}

void MoeLayer::group_by_expert(const ForwardContext& ctx) const {
  Workspace& ws = ctx.workspace;
  const int64_t num_tokens = ctx.batch.num_tokens();
  const int64_t num_routed = num_tokens * top_k_;
  const int32_t* ids = ws.routed_experts();
  const float* weights = ws.routed_weights();
  // Counting sort by expert, stable in token order; afterwards offsets[e] is
  // where expert e's rows end (and e + 1's begin).
  std::vector<int32_t>& offsets = ws.expert_offsets();
  offsets.assign(experts_.size() + 1, 0);
  for (int64_t r = 0; r < num_routed; ++r) ++offsets[ids[r] + 1];
  for (size_t e = 1; e < offsets.size(); ++e) offsets[e] += offsets[e - 1];
  std::vector<RoutedRow>& rows = ws.routed_rows();
  rows.resize(static_cast<size_t>(num_routed + (has_shared_ ? num_tokens : 0)));
  for (int64_t r = 0; r < num_routed; ++r) {
    rows[offsets[ids[r]]++] = {static_cast<int32_t>(r / top_k_), weights[r]};
  }
  // The shared expert as one more expert every token selects, weighted by
  // sigmoid of its gate.
  for (int64_t t = 0; has_shared_ && t < num_tokens; ++t) {
    rows[num_routed + t] = {static_cast<int32_t>(t),
                            1.0f / (1.0f + std::exp(-ws.shared_gate()[t]))};
  }
}

void MoeLayer::run_and_add(const ForwardContext& ctx, const Expert& expert, const RoutedRow* rows,
                           int64_t n, const float* in, float* out) const {
  Workspace& ws = ctx.workspace;
  for (int64_t r = 0; r < n; ++r) {
    const float* src = in + int64_t{rows[r].token} * hidden_;
    std::copy(src, src + hidden_, ws.expert_rows() + r * hidden_);
  }
  run_expert(ctx, expert, n);
  ctx.backend.weighted_scatter_add(ws.expert_out(), n, hidden_, rows, out);
}

bool MoeLayer::can_group(int64_t num_tokens) const {
  return decode_grouped_ && all_fused_ && num_tokens <= ops::kGroupedMaxRows;
}

void MoeLayer::forward_grouped(const ForwardContext& ctx, const float* in, float* out) const {
  Workspace& ws = ctx.workspace;
  const int64_t num_tokens = ctx.batch.num_tokens();
  const RoutedRow* rows = ws.routed_rows().data();
  const std::vector<int32_t>& ends = ws.expert_offsets();
  // Calls fn(expert, its rows, n) for every selected expert in ascending id,
  // then the fused shared expert.
  auto for_each_selected = [&](auto&& fn) {
    for (size_t e = 0; e < experts_.size(); ++e) {
      const int32_t begin = e == 0 ? 0 : ends[e - 1];
      if (ends[e] > begin) fn(experts_[e], rows + begin, int64_t{ends[e] - begin});
    }
    if (has_shared_ && shared_fused_) fn(shared_, rows + num_tokens * top_k_, num_tokens);
  };
  // Gate/up of all of them in one dispatch; expert i's gathered rows sit at
  // row `base` (the rows before it) of the grouped buffers.
  std::vector<ops::GroupedMatmul>& mm = ws.grouped_matmuls();
  mm.clear();
  int64_t base = 0, gate_up_offset = 0;
  for_each_selected([&](const Expert& e, const RoutedRow* r, int64_t n) {
    const float* x = in;  // one token: every expert reads its row in place
    if (num_tokens > 1) {
      float* gathered = ws.grouped_x() + base * hidden_;
      for (int64_t i = 0; i < n; ++i) {
        const float* src = in + int64_t{r[i].token} * hidden_;
        std::copy(src, src + hidden_, gathered + i * hidden_);
      }
      x = gathered;
    }
    mm.push_back({x, n, &e.gate_up.fused_weight(), ws.grouped_gate_up() + gate_up_offset, r});
    base += n;
    gate_up_offset += n * 2 * e.intermediate;
  });
  ctx.backend.grouped_matmul(mm.data(), static_cast<int64_t>(mm.size()));
  // silu(gate) * up per row, then down of every expert in one dispatch with
  // the weighted scatter-add into out.
  size_t i = 0;
  int64_t act_offset = 0;
  base = 0;
  for_each_selected([&](const Expert& e, const RoutedRow*, int64_t n) {
    const int64_t inter = e.intermediate;
    float* act = ws.grouped_act() + act_offset;
    for (int64_t r = 0; r < n; ++r) {
      const float* row = mm[i].y + r * 2 * inter;
      ctx.backend.silu_mul(row, row + inter, inter, act + r * inter);
    }
    mm[i].x = act;
    mm[i].w = &e.down;
    mm[i].y = ws.grouped_out() + base * hidden_;
    act_offset += n * inter;
    base += n;
    ++i;
  });
  ctx.backend.grouped_matmul_scatter_add(mm.data(), static_cast<int64_t>(mm.size()), out);
}

void MoeLayer::forward(const ForwardContext& ctx, int64_t layer_idx, const float* in,
                       float* out) const {
  Workspace& ws = ctx.workspace;
  const int64_t num_tokens = ctx.batch.num_tokens();
  route(ctx, in);
  ws.expert_load().add(layer_idx, ws.routed_experts(), num_tokens * top_k_);
  group_by_expert(ctx);
  std::fill(out, out + num_tokens * hidden_, 0.0f);
  if (can_group(num_tokens)) {
    forward_grouped(ctx, in, out);
    if (has_shared_ && !shared_fused_) {
      run_and_add(ctx, shared_, ws.routed_rows().data() + num_tokens * top_k_, num_tokens, in, out);
    }
    return;
  }
  const RoutedRow* rows = ws.routed_rows().data();
  const std::vector<int32_t>& ends = ws.expert_offsets();
  for (size_t e = 0; e < experts_.size(); ++e) {
    const int32_t begin = e == 0 ? 0 : ends[e - 1];
    if (ends[e] > begin) run_and_add(ctx, experts_[e], rows + begin, ends[e] - begin, in, out);
  }
  if (has_shared_) run_and_add(ctx, shared_, rows + num_tokens * top_k_, num_tokens, in, out);
}

}  // namespace strata::model
