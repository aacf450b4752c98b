#include "model/layers/gated_mlp.h"

namespace strata::model {

StatusOr<GatedMlp> GatedMlp::load(const WeightSource& w, const std::string& p, int64_t hidden,
                                  int64_t intermediate) {
  GatedMlp mlp;
  mlp.intermediate_ = intermediate;
  STRATA_ASSIGN_OR_RETURN(
      mlp.gate_up_,
      FusedLinear::load(
          w, {{p + "mlp.gate_proj.weight", intermediate}, {p + "mlp.up_proj.weight", intermediate}},
          hidden));
  STRATA_ASSIGN_OR_RETURN(mlp.down_,
                          load_linear(w, p + "mlp.down_proj.weight", hidden, intermediate));
  return mlp;
}

void GatedMlp::forward(const ForwardContext& ctx, const float* in, float* out) const {
  const int64_t num_tokens = ctx.batch.num_tokens();
  const int64_t inter = intermediate_;
  Workspace& ws = ctx.workspace;
  gate_up_.forward(ctx.backend, in, num_tokens, nullptr, ws.gate_up(), ws.split_scratch());
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* row = ws.gate_up() + t * 2 * inter;
    ctx.backend.silu_mul(row, row + inter, inter, ws.act() + t * inter);
  }
  ctx.backend.matmul(ws.act(), num_tokens, down_, nullptr, out);
}

}  // namespace strata::model
