// WeightSource tests; the format tests live in *_test.cc beside this file and
// link into the same loader_test binary.
#include <gtest/gtest.h>

#include "model/loader/test_files.h"
#include "model/loader/weight_source.h"

namespace strata::model {
namespace {

using testing::has_error;

TensorEntry entry(const float* data, std::vector<int64_t> shape, const std::string& file) {
  TensorEntry e;
  e.view.data = data;
  e.view.dtype = tensor::DType::kF32;
  e.view.shape = std::move(shape);
  e.file = file;
  return e;
}

TEST(WeightSource, GetChecksShapeAndNamesEverything) {
  static const float kData[6] = {1, 2, 3, 4, 5, 6};
  WeightSource w;
  ASSERT_TRUE(w.add_file(nullptr, {{"w1", entry(kData, {2, 3}, "/m/a.safetensors")}}).ok());
  ASSERT_TRUE(w.add_file(nullptr, {{"w2", entry(kData, {6}, "/m/b.safetensors")}}).ok());
  StatusOr<tensor::TensorView> v = w.get("w1", {2, 3});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->data, kData);
  EXPECT_TRUE(has_error(w.get("w1", {3, 2}).status(), StatusCode::kInvalidArgument,
                        {"/m/a.safetensors", "'w1'", "[2, 3]", "expected [3, 2]"}));
  EXPECT_TRUE(has_error(w.get("w1", {6}).status(), StatusCode::kInvalidArgument,
                        {"'w1'", "[2, 3]", "[6]"}));
  EXPECT_TRUE(has_error(w.get("lm_head.weight", {2, 3}).status(), StatusCode::kNotFound,
                        {"'lm_head.weight'", "/m/a.safetensors", "/m/b.safetensors"}));
  EXPECT_TRUE(has_error(w.add_file(nullptr, {{"w1", entry(kData, {6}, "/m/c.safetensors")}}),
                        StatusCode::kInvalidArgument,
                        {"'w1'", "/m/a.safetensors", "/m/c.safetensors"}));
  EXPECT_EQ(w.names(), (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(w.find("w2")->file, "/m/b.safetensors");
  EXPECT_EQ(w.find("w3"), nullptr);
}

}  // namespace
}  // namespace strata::model
