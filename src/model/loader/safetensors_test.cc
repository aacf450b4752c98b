#include "model/loader/safetensors.h"

#include <gtest/gtest.h>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using nlohmann::json;
using testing::has_error;
using testing::StTensor;
using testing::test_values;

std::vector<float> to_f32(const tensor::TensorView& v) {
  std::vector<float> out(v.num_elements());
  tensor::convert_to_f32(v.data, v.dtype, v.num_elements(), out.data());
  return out;
}

std::vector<StTensor> three_dtypes() {
  return {{"a.f32", "F32", {2, 3}, testing::f32_bytes(test_values(6, 1))},
          {"b.f16", "F16", {5}, testing::f16_bytes(test_values(5, 2))},
          {"c.bf16", "BF16", {3, 1, 2}, testing::bf16_bytes(test_values(6, 3))}};
}

TEST(Safetensors, RoundTripsEachDtypeZeroCopy) {
  testing::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::write_file(path, testing::build_safetensors(three_dtypes()));
  StatusOr<MappedFile> file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  auto tensors = parse_safetensors(*file);
  ASSERT_TRUE(tensors.ok()) << tensors.status().to_string();
  ASSERT_EQ(tensors->size(), 3u);  // __metadata__ is not a tensor
  const TensorEntry& a = tensors->at("a.f32");
  EXPECT_EQ(a.view.dtype, tensor::DType::kF32);
  EXPECT_EQ(a.view.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(to_f32(a.view), test_values(6, 1));
  EXPECT_EQ(a.file, path);
  const TensorEntry& b = tensors->at("b.f16");
  EXPECT_EQ(b.view.dtype, tensor::DType::kF16);
  std::vector<float> b_expected = test_values(5, 2);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(to_f32(b.view)[i], b_expected[i], 1e-3);
  const TensorEntry& c = tensors->at("c.bf16");
  EXPECT_EQ(c.view.shape, (std::vector<int64_t>{3, 1, 2}));
  std::vector<float> c_expected = test_values(6, 3);
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(to_f32(c.view)[i], c_expected[i], 1e-2);
  for (const auto& [name, entry] : *tensors) {  // views point into the mapping
    const auto* p = static_cast<const uint8_t*>(entry.view.data);
    EXPECT_GE(p, file->data()) << name;
    EXPECT_LE(p + entry.view.size_bytes(), file->data() + file->size_bytes()) << name;
  }
}

TEST(Safetensors, OpenKeepsMappingAlive) {
  testing::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::write_file(path, testing::build_safetensors(three_dtypes()));
  StatusOr<WeightSource> weights = open_safetensors(path);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  StatusOr<tensor::TensorView> a = weights->get("a.f32", {2, 3});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(to_f32(*a), test_values(6, 1));
  EXPECT_EQ(weights->names(), (std::vector<std::string>{"a.f32", "b.f16", "c.bf16"}));
}

TEST(Safetensors, UnsupportedDtypeNamesTensor) {
  testing::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::write_file(path,
                      testing::build_safetensors({{"ids", "I64", {2}, std::string(16, '\0')}}));
  EXPECT_TRUE(has_error(open_safetensors(path).status(), StatusCode::kUnimplemented,
                        {path, "'ids'", "I64"}));
}

TEST(Safetensors, TruncatedAtEveryRegion) {
  testing::TempDir dir;
  const std::string bytes = testing::build_safetensors(three_dtypes());
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data(), 8);
  const std::string path = dir.file("cut.safetensors");
  // Inside the length, inside the JSON, right after it, mid-data, one byte short.
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8 + header_bytes / 2}, size_t{8 + header_bytes},
                     size_t{8 + header_bytes + 13}, bytes.size() - 1}) {
    testing::write_file(path, bytes.substr(0, cut));
    Status s = open_safetensors(path).status();
    EXPECT_TRUE(has_error(s, StatusCode::kDataLoss, {path})) << "cut at " << cut;
  }
  // Cut mid-data: the message names the tensor whose bytes are missing.
  testing::write_file(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_TRUE(has_error(open_safetensors(path).status(), StatusCode::kDataLoss,
                        {path, "'c.bf16'", "data_offsets"}));
}

TEST(Safetensors, HeaderLengthLargerThanFile) {
  testing::TempDir dir;
  const std::string path = dir.file("big.safetensors");
  testing::write_file(path, testing::le_bytes(uint64_t{1} << 40) + "{}");
  EXPECT_TRUE(has_error(open_safetensors(path).status(), StatusCode::kDataLoss,
                        {path, "header length", "larger than the file"}));
}

TEST(Safetensors, BadJsonHeader) {
  testing::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const std::string text = "{\"a\": [1, 2";
  testing::write_file(path, testing::le_bytes(uint64_t{text.size()}) + text);
  EXPECT_TRUE(
      has_error(open_safetensors(path).status(), StatusCode::kDataLoss, {path, "invalid JSON"}));
}

TEST(Safetensors, OffsetsMustMatchShapeAndFile) {
  testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  auto check = [&](const json& entry, const std::string& data, const char* what) {
    testing::write_file(path, testing::build_safetensors_raw({{"w", entry}}, data));
    EXPECT_TRUE(
        has_error(open_safetensors(path).status(), StatusCode::kDataLoss, {path, "'w'", what}))
        << entry.dump();
  };
  const std::string data(32, '\0');
  check({{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 16}}}, data, "needs");
  check({{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {16, 48}}}, data, "outside");
  check({{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {8, 4}}}, data, "outside");
  check({{"dtype", "F32"}, {"shape", {-4}}, {"data_offsets", {0, 16}}}, data, "shape");
  check({{"dtype", "F32"}, {"shape", {uint64_t{1} << 62, 8}}, {"data_offsets", {0, 16}}}, data,
        "shape");
  check({{"dtype", "F32"}, {"shape", {uint64_t{1} << 62}}, {"data_offsets", {0, 16}}}, data,
        "needs");
  check({{"dtype", "F32"}, {"shape", {4}}}, data, "data_offsets");
  check({{"dtype", 5}, {"shape", {4}}, {"data_offsets", {0, 16}}}, data, "dtype");
}

TEST(Safetensors, ShardedIndex) {
  testing::TempDir dir;
  std::vector<StTensor> all = three_dtypes();
  testing::write_file(dir.file("model-00001-of-00002.safetensors"),
                      testing::build_safetensors({all[0], all[1]}));
  testing::write_file(dir.file("model-00002-of-00002.safetensors"),
                      testing::build_safetensors({all[2]}));
  json index = {{"metadata", {{"total_size", 40}}},
                {"weight_map",
                 {{"a.f32", "model-00001-of-00002.safetensors"},
                  {"b.f16", "model-00001-of-00002.safetensors"},
                  {"c.bf16", "model-00002-of-00002.safetensors"}}}};
  const std::string index_path = dir.file("model.safetensors.index.json");
  testing::write_file(index_path, index.dump());
  StatusOr<WeightSource> weights = open_safetensors_index(index_path);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  EXPECT_EQ(weights->num_tensors(), 3u);
  EXPECT_EQ(weights->find("c.bf16")->file, dir.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(to_f32(*weights->get("a.f32", {2, 3})), test_values(6, 1));

  // A tensor mapped to a shard that does not hold it.
  index["weight_map"]["c.bf16"] = "model-00001-of-00002.safetensors";
  testing::write_file(index_path, index.dump());
  EXPECT_TRUE(has_error(open_safetensors_index(index_path).status(), StatusCode::kNotFound,
                        {index_path, "'c.bf16'", "model-00001-of-00002.safetensors"}));
  // A shard that does not exist.
  index["weight_map"]["c.bf16"] = "model-00003-of-00002.safetensors";
  testing::write_file(index_path, index.dump());
  EXPECT_TRUE(has_error(open_safetensors_index(index_path).status(), StatusCode::kNotFound,
                        {index_path, "model-00003-of-00002.safetensors", "'c.bf16'"}));
  // Shard names are plain file names.
  index["weight_map"]["c.bf16"] = "../elsewhere.safetensors";
  testing::write_file(index_path, index.dump());
  EXPECT_TRUE(has_error(open_safetensors_index(index_path).status(), StatusCode::kInvalidArgument,
                        {index_path, "plain file name"}));
  testing::write_file(index_path, "{\"weight_map\": 3}");
  EXPECT_TRUE(has_error(open_safetensors_index(index_path).status(), StatusCode::kInvalidArgument,
                        {index_path, "weight_map"}));
}

TEST(Safetensors, DuplicateTensorAcrossShards) {
  testing::TempDir dir;
  std::vector<StTensor> all = three_dtypes();
  testing::write_file(dir.file("s1.safetensors"), testing::build_safetensors({all[0]}));
  testing::write_file(dir.file("s2.safetensors"), testing::build_safetensors({all[0]}));
  json index = {{"weight_map", {{"a.f32", "s1.safetensors"}, {"x", "s2.safetensors"}}}};
  testing::write_file(dir.file("index.json"), index.dump());
  // s2 does not hold "x": caught first; then make it only a duplicate.
  EXPECT_FALSE(open_safetensors_index(dir.file("index.json")).ok());
  index["weight_map"].erase("x");
  index["weight_map"]["a.f32"] = "s2.safetensors";
  index["weight_map"]["b"] = "s1.safetensors";
  testing::write_file(
      dir.file("s1.safetensors"),
      testing::build_safetensors({all[0], {"b", "F32", {1}, std::string(4, '\0')}}));
  testing::write_file(dir.file("index.json"), index.dump());
  EXPECT_TRUE(has_error(open_safetensors_index(dir.file("index.json")).status(),
                        StatusCode::kInvalidArgument,
                        {"'a.f32'", "s1.safetensors", "s2.safetensors"}));
}

}  // namespace
}  // namespace strata::model
