#include "model/layers/embedding.h"

#include "base/check.h"

namespace strata::model {

StatusOr<Embedding> Embedding::load(const WeightSource& weights, const std::string& name,
                                    int64_t vocab, int64_t hidden) {
  Embedding e;
  STRATA_ASSIGN_OR_RETURN(e.table_, weights.get(name, {vocab, hidden}));
  const int64_t block = tensor::dtype_block_size(e.table_.dtype);
  if (hidden % block != 0) {
    return invalid_argument(name + ": " + tensor::dtype_name(e.table_.dtype) +
                            " needs hidden_size % " + std::to_string(block) + " == 0");
  }
  return e;
}

void Embedding::lookup(const int32_t* tokens, int64_t num_tokens, float* x) const {
  const int64_t vocab = table_.dim(0), hidden = table_.dim(1);
  const auto* base = static_cast<const uint8_t*>(table_.data);
  for (int64_t t = 0; t < num_tokens; ++t) {
    STRATA_CHECK(tokens[t] >= 0 && tokens[t] < vocab)
        << "token id " << tokens[t] << " outside vocabulary of " << vocab;
    tensor::convert_to_f32(base + tokens[t] * row_bytes(), table_.dtype, hidden, x + t * hidden);
  }
}

}  // namespace strata::model
