#include "model/loader/gguf.h"

#include <gtest/gtest.h>

#include <limits>

#include "model/loader/test_files.h"

namespace strata::model {
namespace {

using T = GgufValueType;
using testing::GgufWriter;
using testing::has_error;
using testing::test_values;

StatusOr<GgufFile> write_and_open(const testing::TempDir& dir, const std::string& bytes) {
  const std::string path = dir.file("m.gguf");
  testing::write_file(path, bytes);
  return GgufFile::open(path);
}

GgufWriter every_type_writer() {
  GgufWriter w;
  w.add_scalar("u8", T::kUint8, uint8_t{200});
  w.add_scalar("i8", T::kInt8, int8_t{-100});
  w.add_scalar("u16", T::kUint16, uint16_t{60000});
  w.add_scalar("i16", T::kInt16, int16_t{-30000});
  w.add_scalar("u32", T::kUint32, uint32_t{4000000000u});
  w.add_scalar("i32", T::kInt32, int32_t{-2000000000});
  w.add_scalar("f32", T::kFloat32, 1.5f);
  w.add_scalar("bool", T::kBool, uint8_t{1});
  w.add_string("str", "héllo");
  w.add_scalar("u64", T::kUint64, uint64_t{1} << 40);
  w.add_scalar("i64", T::kInt64, int64_t{-(int64_t{1} << 40)});
  w.add_scalar("f64", T::kFloat64, 0.1);
  w.add_scalar("u64_huge", T::kUint64, std::numeric_limits<uint64_t>::max());
  w.add_array("arr_i32", T::kInt32, std::vector<int32_t>{1, -2, 3});
  w.add_array("arr_u8", T::kUint8, std::vector<uint8_t>{7, 8});
  w.add_array("arr_f32", T::kFloat32, std::vector<float>{0.5f, -2.0f});
  w.add_array("arr_f64", T::kFloat64, std::vector<double>{1e300});
  w.add_array("arr_empty", T::kInt64, std::vector<int64_t>{});
  w.add_string_array("arr_str", {"a", "", "ccc"});
  // [[1, 2], [3]] as an array of arrays of u16.
  std::string nested = GgufWriter::array_header(T::kArray, 2) +
                       GgufWriter::array_header(T::kUint16, 2) + testing::le_bytes(uint16_t{1}) +
                       testing::le_bytes(uint16_t{2}) + GgufWriter::array_header(T::kUint16, 1) +
                       testing::le_bytes(uint16_t{3});
  w.add_raw("arr_nested", T::kArray, nested);
  return w;
}

TEST(Gguf, MetadataOfEveryType) {
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, every_type_writer().build());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 20u);
  EXPECT_EQ(*f->get_int("u8"), 200);
  EXPECT_EQ(*f->get_int("i8"), -100);
  EXPECT_EQ(*f->get_int("u16"), 60000);
  EXPECT_EQ(*f->get_int("i16"), -30000);
  EXPECT_EQ(*f->get_int("u32"), 4000000000LL);
  EXPECT_EQ(*f->get_int("i32"), -2000000000LL);
  EXPECT_EQ(*f->get_float("f32"), 1.5);
  EXPECT_EQ(*f->get_bool("bool"), true);
  EXPECT_EQ(*f->get_string("str"), "héllo");
  EXPECT_EQ(*f->get_int("u64"), int64_t{1} << 40);
  EXPECT_EQ(*f->get_int("i64"), -(int64_t{1} << 40));
  EXPECT_EQ(*f->get_float("f64"), 0.1);
  EXPECT_EQ(*f->get_float("i32"), -2e9);  // integers read as floats too
  EXPECT_EQ(f->find("u32")->type, T::kUint32);
  EXPECT_EQ(*f->get_int_array("arr_i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(*f->get_int_array("arr_u8"), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(*f->get_float_array("arr_f32"), (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(*f->get_float_array("arr_f64"), std::vector<double>{1e300});
  EXPECT_TRUE(f->get_int_array("arr_empty")->empty());
  EXPECT_EQ(*f->get_string_array("arr_str"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(*f->get_array_length("arr_str"), 3u);
  const auto& outer = std::get<GgufArrayRef>(f->find("arr_nested")->data);
  EXPECT_EQ(outer.element_type, T::kArray);
  StatusOr<std::vector<GgufValue>> rows = f->array_elements(outer);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  auto inner = f->array_elements(std::get<GgufArrayRef>((*rows)[1].data));
  ASSERT_TRUE(inner.ok());
  ASSERT_EQ(inner->size(), 1u);
  EXPECT_EQ(std::get<uint64_t>((*inner)[0].data), 3u);
  EXPECT_EQ(*f->get_int_or("absent", 7), 7);
  EXPECT_EQ(*f->get_float_or("f32", 7), 1.5);
}

TEST(Gguf, GetterErrorsNameFileAndKey) {
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, every_type_writer().build());
  ASSERT_TRUE(f.ok());
  const std::string path = dir.file("m.gguf");
  EXPECT_TRUE(has_error(f->get_int("str").status(), StatusCode::kInvalidArgument,
                        {path, "'str'", "STRING", "integer"}));
  EXPECT_TRUE(has_error(f->get_string("missing.key").status(), StatusCode::kNotFound,
                        {path, "'missing.key'"}));
  EXPECT_TRUE(
      has_error(f->get_int("u64_huge").status(), StatusCode::kOutOfRange, {path, "'u64_huge'"}));
  EXPECT_TRUE(has_error(f->get_string_array("arr_i32").status(), StatusCode::kInvalidArgument,
                        {"'arr_i32'", "ARRAY of INT32", "strings"}));
  EXPECT_TRUE(has_error(f->get_bool("u8").status(), StatusCode::kInvalidArgument, {"'u8'"}));
  EXPECT_TRUE(has_error(f->get_int_or("str", 1).status(), StatusCode::kInvalidArgument, {"'str'"}));
}

std::vector<float> to_f32(const tensor::TensorView& v) {
  std::vector<float> out(v.num_elements());
  tensor::convert_to_f32(v.data, v.dtype, v.num_elements(), out.data());
  return out;
}

TEST(Gguf, TensorsRoundTripEachTypeZeroCopy) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  const std::vector<float> v = test_values(3 * 64, 9);
  w.add_tensor("f32", kGgmlTypeF32, {3, 64}, testing::f32_bytes(v));
  w.add_tensor("f16", kGgmlTypeF16, {3, 64}, testing::f16_bytes(v));
  w.add_tensor("bf16", kGgmlTypeBF16, {3, 64}, testing::bf16_bytes(v));
  w.add_tensor("q8", kGgmlTypeQ8_0, {3, 64}, testing::q8_0_bytes(v));
  w.add_tensor("vec", kGgmlTypeF32, {5}, testing::f32_bytes(test_values(5, 1)));
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, w.build());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 5u);
  EXPECT_EQ(f->data_offset_bytes(), w.data_offset());
  const MappedFile& map = *f->mapping();
  for (const GgufTensorInfo& t : f->tensors()) {
    const auto* p = static_cast<const uint8_t*>(t.view.data);
    EXPECT_GE(p, map.data()) << t.name;
    EXPECT_LE(p + t.view.size_bytes(), map.data() + map.size_bytes()) << t.name;
    EXPECT_EQ((p - map.data()) % 32, 0) << t.name;
  }
  const GgufTensorInfo* f32 = f->find_tensor("f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->view.shape, (std::vector<int64_t>{3, 64}));  // row-major
  EXPECT_EQ(f32->gguf_dims, (std::vector<int64_t>{64, 3}));   // as stored
  EXPECT_EQ(to_f32(f32->view), v);
  std::vector<float> f16 = to_f32(f->find_tensor("f16")->view);
  std::vector<float> bf16 = to_f32(f->find_tensor("bf16")->view);
  std::vector<float> q8 = to_f32(f->find_tensor("q8")->view);
  EXPECT_EQ(f->find_tensor("q8")->view.dtype, tensor::DType::kQ8_0);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(f16[i], v[i], 1e-3);
    EXPECT_NEAR(bf16[i], v[i], 1e-2);
    EXPECT_NEAR(q8[i], v[i], 1.0 / 127);
  }
  EXPECT_EQ(to_f32(f->find_tensor("vec")->view), test_values(5, 1));
  EXPECT_EQ(f->find_tensor("nope"), nullptr);
}

TEST(Gguf, Version2AndCustomAlignment) {
  GgufWriter w(2);
  w.add_scalar("general.alignment", T::kUint32, uint32_t{64});
  w.add_tensor("a", kGgmlTypeF32, {3}, testing::f32_bytes({1, 2, 3}));
  w.add_tensor("b", kGgmlTypeF32, {2}, testing::f32_bytes({4, 5}));
  testing::TempDir dir;
  StatusOr<GgufFile> f = write_and_open(dir, w.build(64));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->find_tensor("b")->offset_bytes, w.data_offset(64) + 64);
  EXPECT_EQ(to_f32(f->find_tensor("b")->view), (std::vector<float>{4, 5}));
}

TEST(Gguf, BadHeaders) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  std::string good = every_type_writer().build();
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_TRUE(has_error(write_and_open(dir, bad).status(), StatusCode::kInvalidArgument,
                        {path, "not a GGUF file"}));
  EXPECT_TRUE(has_error(write_and_open(dir, GgufWriter(1).build()).status(),
                        StatusCode::kUnimplemented, {path, "version 1"}));
  EXPECT_TRUE(has_error(write_and_open(dir, GgufWriter(4).build()).status(),
                        StatusCode::kUnimplemented, {path, "version 4"}));
  EXPECT_TRUE(has_error(write_and_open(dir, GgufWriter(3u << 24).build()).status(),
                        StatusCode::kUnimplemented, {path, "big-endian"}));
  EXPECT_TRUE(has_error(write_and_open(dir, "").status(), StatusCode::kDataLoss, {path}));
}

TEST(Gguf, EveryTruncationIsAnError) {
  GgufWriter w = every_type_writer();
  w.add_tensor("t", kGgmlTypeQ8_0, {2, 32}, testing::q8_0_bytes(test_values(64, 2)));
  const std::string bytes = w.build();
  ASSERT_TRUE([&] {
    testing::TempDir dir;
    return write_and_open(dir, bytes).ok();
  }());
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  // Every byte through the metadata and tensor infos, then a stride through the data.
  for (size_t cut = 0; cut < bytes.size(); cut += cut < w.data_offset() ? 1 : 7) {
    StatusOr<GgufFile> f = write_and_open(dir, bytes.substr(0, cut));
    ASSERT_FALSE(f.ok()) << "cut at " << cut;
    ASSERT_EQ(f.status().code(), StatusCode::kDataLoss) << f.status().to_string();
    ASSERT_NE(f.status().message().find(path), std::string::npos) << f.status().to_string();
  }
  // Cut mid-data: names the tensor.
  EXPECT_TRUE(has_error(write_and_open(dir, bytes.substr(0, bytes.size() - 5)).status(),
                        StatusCode::kDataLoss, {path, "'t'", "past the end"}));
}

// Every llama.cpp type Strata reads maps to its DType, with its block size
// checked against the row length.
TEST(Gguf, ReadsKQuantsAndLegacyQuants) {
  struct Case {
    uint32_t ggml;
    tensor::DType dtype;
  };
  const Case cases[] = {{kGgmlTypeQ4_0, tensor::DType::kQ4_0},   {kGgmlTypeQ4_1, tensor::DType::kQ4_1},
                        {kGgmlTypeQ5_0, tensor::DType::kQ5_0},   {kGgmlTypeQ5_1, tensor::DType::kQ5_1},
                        {kGgmlTypeQ2_K, tensor::DType::kQ2_K},   {kGgmlTypeQ3_K, tensor::DType::kQ3_K},
                        {kGgmlTypeQ4_K, tensor::DType::kQ4_K},   {kGgmlTypeQ5_K, tensor::DType::kQ5_K},
                        {kGgmlTypeQ6_K, tensor::DType::kQ6_K},   {kGgmlTypeIQ4_NL, tensor::DType::kIQ4_NL},
                        {kGgmlTypeIQ4_XS, tensor::DType::kIQ4_XS}};
  for (const Case& c : cases) {
    testing::TempDir dir;
    GgufWriter w;
    const int64_t bytes = tensor::dtype_size_bytes(c.dtype, 2 * 256);
    w.add_tensor("t", c.ggml, {2, 256}, std::string(static_cast<size_t>(bytes), '\x11'));
    StatusOr<GgufFile> f = write_and_open(dir, w.build());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->find_tensor("t")->view.dtype, c.dtype) << tensor::dtype_name(c.dtype);
    EXPECT_EQ(f->find_tensor("t")->view.size_bytes(), bytes);
    if (tensor::dtype_block_size(c.dtype) == 256) {  // a 32-value row is not a whole super-block
      GgufWriter bad;
      bad.add_tensor("r", c.ggml, {8, 32}, std::string(static_cast<size_t>(bytes), '\0'));
      EXPECT_TRUE(has_error(write_and_open(dir, bad.build()).status(), StatusCode::kDataLoss,
                            {"'r'", "not a multiple of 256"}))
          << tensor::dtype_name(c.dtype);
    }
  }
}

TEST(Gguf, UnsupportedTensorTypeNamesTensorAndType) {
  testing::TempDir dir;
  GgufWriter w;
  w.add_tensor("blk.0.ffn_down.weight", 16 /* IQ2_XXS */, {256}, std::string(66, '\0'));
  EXPECT_TRUE(has_error(write_and_open(dir, w.build()).status(), StatusCode::kUnimplemented,
                        {dir.file("m.gguf"), "'blk.0.ffn_down.weight'", "IQ2_XXS"}));
  GgufWriter w2;
  w2.add_tensor("x", 200, {4}, std::string(16, '\0'));
  EXPECT_TRUE(has_error(write_and_open(dir, w2.build()).status(), StatusCode::kUnimplemented,
                        {"'x'", "type 200"}));
}

// Header bytes for a file whose metadata section is `kv` (count `num_kvs`).
std::string raw_file(uint64_t num_tensors, uint64_t num_kvs, const std::string& rest) {
  return "GGUF" + testing::le_bytes(uint32_t{3}) + testing::le_bytes(num_tensors) +
         testing::le_bytes(num_kvs) + rest;
}

TEST(Gguf, CorruptCountsAndLengthsAreBounded) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  auto expect_loss = [&](const std::string& bytes, const std::string& what) {
    EXPECT_TRUE(
        has_error(write_and_open(dir, bytes).status(), StatusCode::kDataLoss, {path, what}));
  };
  expect_loss(raw_file(uint64_t{1} << 60, 0, ""), "tensors");
  expect_loss(raw_file(0, uint64_t{1} << 60, ""), "metadata");
  expect_loss(raw_file(0, 1, testing::le_bytes(~uint64_t{0}) + std::string(64, 'k')),
              "metadata key");
  const std::string key = GgufWriter::gguf_string("k");
  expect_loss(raw_file(0, 1, key + testing::le_bytes(uint32_t{99}) + std::string(16, '\0')),
              "unknown value type 99");
  expect_loss(
      raw_file(0, 1,
               key + testing::le_bytes(uint32_t{9}) +
                   GgufWriter::array_header(T::kString, uint64_t{1} << 61) + std::string(64, '\0')),
      "array");
  expect_loss(raw_file(0, 1,
                       key + testing::le_bytes(uint32_t{9}) +
                           GgufWriter::array_header(T::kUint32, ~uint64_t{0} / 2)),
              "array elements");
  std::string deep;  // arrays nested 20 deep
  for (int i = 0; i < 20; ++i) deep += GgufWriter::array_header(T::kArray, 1);
  expect_loss(raw_file(0, 1,
                       key + testing::le_bytes(uint32_t{9}) + deep +
                           GgufWriter::array_header(T::kUint8, 0)),
              "nested");
}

TEST(Gguf, BadTensorInfos) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  auto expect_loss = [&](const GgufWriter& w, const std::vector<std::string>& parts) {
    EXPECT_TRUE(has_error(write_and_open(dir, w.build()).status(), StatusCode::kDataLoss, parts));
  };
  GgufWriter misaligned;
  misaligned.add_tensor("m", kGgmlTypeF32, {8}, std::string(32, '\0'));
  misaligned.override_offset(0, 4);
  expect_loss(misaligned, {path, "'m'", "alignment"});
  GgufWriter past_end;
  past_end.add_tensor("p", kGgmlTypeF32, {8}, std::string(32, '\0'));
  past_end.override_offset(0, 1024);
  expect_loss(past_end, {path, "'p'", "past the end"});
  GgufWriter q8_row;
  q8_row.add_tensor("q", kGgmlTypeQ8_0, {4, 16}, std::string(68, '\0'));
  expect_loss(q8_row, {path, "'q'", "multiple of 32"});
  GgufWriter rank5;
  rank5.add_tensor("r", kGgmlTypeF32, {1, 1, 1, 1, 2}, std::string(8, '\0'));
  expect_loss(rank5, {path, "'r'", "rank 5"});
  GgufWriter huge;
  huge.add_tensor("h", kGgmlTypeF32, {int64_t{1} << 40, int64_t{1} << 40}, "");
  expect_loss(huge, {path, "'h'"});
  GgufWriter dup;
  dup.add_tensor("d", kGgmlTypeF32, {1}, std::string(4, '\0'));
  dup.add_tensor("d", kGgmlTypeF32, {1}, std::string(4, '\0'));
  expect_loss(dup, {path, "'d'", "twice"});
  GgufWriter dup_key;
  dup_key.add_string("k", "a");
  dup_key.add_string("k", "b");
  expect_loss(dup_key, {path, "'k'", "twice"});
  GgufWriter bad_align;
  bad_align.add_scalar("general.alignment", T::kUint32, uint32_t{48});
  expect_loss(bad_align, {path, "general.alignment 48"});
}

}  // namespace
}  // namespace strata::model
