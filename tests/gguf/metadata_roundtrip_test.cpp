// Every GGUF value type, including nested arrays and the 64-bit extremes, written by GgufWriter and
// read back by GgufFile; and the typed getters' refusals, which must name the key and the types.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gguf/gguf_test_util.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

GgufValue scalar(GgufValueType t, int64_t i) {
  GgufValue v;
  v.type = t;
  v.i = i;
  return v;
}
GgufValue floating(GgufValueType t, double f) {
  GgufValue v;
  v.type = t;
  v.f = f;
  return v;
}
GgufValue int_array(GgufValueType et, std::vector<int64_t> xs) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = et;
  v.ints = std::move(xs);
  return v;
}
GgufValue array_of(std::vector<GgufValue> xs) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = GgufValueType::ARRAY;
  v.arrays = std::move(xs);
  return v;
}

class MetadataRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("meta.gguf");
    GgufWriter w(path_);
    w.set("u8", scalar(GgufValueType::U8, 255));
    w.set("i8", scalar(GgufValueType::I8, -128));
    w.set("u16", scalar(GgufValueType::U16, 65535));
    w.set("i16", scalar(GgufValueType::I16, -32768));
    w.set("u32", scalar(GgufValueType::U32, 4294967295LL));
    w.set("i32", scalar(GgufValueType::I32, std::numeric_limits<int32_t>::min()));
    w.set_u64("u64", std::numeric_limits<uint64_t>::max());
    w.set_u64("u64.small", 12345);
    w.set("i64", scalar(GgufValueType::I64, std::numeric_limits<int64_t>::min()));
    w.set_f32("f32", 0.1f);
    w.set("f64", floating(GgufValueType::F64, 0.1));
    w.set("f64.tiny", floating(GgufValueType::F64, std::numeric_limits<double>::denorm_min()));
    w.set_bool("bool.true", true);
    w.set_bool("bool.false", false);
    w.set_string("string", std::string("with\0nul and \xc3\xa9", 14));
    w.set_string("string.empty", "");
    w.set_string_array("arr.str", {"x", "", "yz"});
    w.set_i32_array("arr.i32", {-1, 0, 2147483647});
    w.set_f32_array("arr.f32", {1.5, -2.25});
    w.set("arr.u64", int_array(GgufValueType::U64, {-1, 7}));  // -1 is u64 max's bit pattern
    w.set("arr.i64", int_array(GgufValueType::I64, {std::numeric_limits<int64_t>::max(), -5}));
    w.set("arr.bool", int_array(GgufValueType::BOOL, {1, 0, 1}));
    w.set("arr.u8", int_array(GgufValueType::U8, {0, 200}));
    w.set("arr.empty", int_array(GgufValueType::U16, {}));
    GgufValue f64s;
    f64s.type = GgufValueType::ARRAY;
    f64s.elem_type = GgufValueType::F64;
    f64s.floats = {0.1, -1e300};
    w.set("arr.f64", f64s);
    // [[1, 2], [], [[3]]]-like: arrays of arrays of different element types, two levels deep.
    GgufValue inner_str;
    inner_str.type = GgufValueType::ARRAY;
    inner_str.elem_type = GgufValueType::STRING;
    inner_str.strings = {"deep"};
    w.set("arr.nested", array_of({int_array(GgufValueType::I16, {1, 2}), int_array(GgufValueType::U8, {}),
                                  array_of({inner_str})}));
    w.finish();
    g_ = GgufFile::open(path_);
  }

  test::ScratchDir dir_;
  std::string path_;
  std::unique_ptr<GgufFile> g_;
};

TEST_F(MetadataRoundTrip, IntegersKeepTheirTypeAndValue) {
  EXPECT_EQ(g_->find("u8")->type, GgufValueType::U8);
  EXPECT_EQ(g_->get_int("u8"), 255);
  EXPECT_EQ(g_->get_int("i8"), -128);
  EXPECT_EQ(g_->get_int("u16"), 65535);
  EXPECT_EQ(g_->get_int("i16"), -32768);
  EXPECT_EQ(g_->get_int("u32"), 4294967295LL);
  EXPECT_EQ(g_->get_int("i32"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(g_->get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(g_->get_int("u64.small"), 12345);
  EXPECT_EQ(g_->find("i64")->type, GgufValueType::I64);
  EXPECT_EQ(g_->find("u32")->type, GgufValueType::U32);
}

TEST_F(MetadataRoundTrip, U64MaxKeepsItsBitsButIsNoInt64) {
  const GgufValue* v = g_->find("u64");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, GgufValueType::U64);
  EXPECT_EQ(static_cast<uint64_t>(v->i), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(v->to_string(), "18446744073709551615");
  try {
    g_->get_int("u64");
    FAIL() << "u64 max converted to int64";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'u64'"));
    EXPECT_THAT(e.what(), HasSubstr("out of range"));
  }
}

TEST_F(MetadataRoundTrip, FloatsAreExact) {
  EXPECT_EQ(g_->find("f32")->type, GgufValueType::F32);
  EXPECT_EQ(g_->get_float("f32"), static_cast<double>(0.1f));
  EXPECT_EQ(g_->find("f64")->type, GgufValueType::F64);
  EXPECT_EQ(g_->get_float("f64"), 0.1);  // f64 is not squeezed through f32
  EXPECT_EQ(g_->get_float("f64.tiny"), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(g_->get_float("u32"), 4294967295.0);  // integers widen to float on request
}

TEST_F(MetadataRoundTrip, BoolsAndStrings) {
  EXPECT_TRUE(g_->get_bool("bool.true", false));
  EXPECT_FALSE(g_->get_bool("bool.false", true));
  EXPECT_TRUE(g_->get_bool("missing", true));
  EXPECT_EQ(g_->get_string("string"), std::string("with\0nul and \xc3\xa9", 14));
  EXPECT_EQ(g_->get_string("string.empty"), "");
  EXPECT_EQ(g_->get_string("missing", "default"), "default");
}

TEST_F(MetadataRoundTrip, FlatArrays) {
  EXPECT_EQ(g_->get_string_array("arr.str"), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_EQ(g_->get_int_array("arr.i32"), (std::vector<int64_t>{-1, 0, 2147483647}));
  EXPECT_EQ(g_->get_float_array("arr.f32"), (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(g_->get_float_array("arr.f64"), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(g_->get_int_array("arr.u64"), (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ(g_->get_int_array("arr.i64"), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -5}));
  EXPECT_EQ(g_->get_int_array("arr.bool"), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(g_->get_int_array("arr.u8"), (std::vector<int64_t>{0, 200}));
  EXPECT_EQ(g_->get_float_array("arr.u8"), (std::vector<double>{0, 200}));
  EXPECT_EQ(g_->find("arr.empty")->elem_type, GgufValueType::U16);
  EXPECT_EQ(g_->find("arr.empty")->array_size(), 0u);
}

TEST_F(MetadataRoundTrip, NestedArrays) {
  const GgufValue* v = g_->find("arr.nested");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->elem_type, GgufValueType::ARRAY);
  ASSERT_EQ(v->arrays.size(), 3u);
  EXPECT_EQ(v->arrays[0].elem_type, GgufValueType::I16);
  EXPECT_EQ(v->arrays[0].ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(v->arrays[1].elem_type, GgufValueType::U8);
  EXPECT_EQ(v->arrays[1].array_size(), 0u);
  ASSERT_EQ(v->arrays[2].arrays.size(), 1u);
  EXPECT_EQ(v->arrays[2].arrays[0].strings, (std::vector<std::string>{"deep"}));
  EXPECT_EQ(v->to_string(), "[3 x array] [2 x i16] 1, 2, [0 x u8], [1 x array] [1 x string] 'deep'");
}

TEST_F(MetadataRoundTrip, KeysKeepFileOrder) {
  ASSERT_FALSE(g_->metadata().empty());
  EXPECT_EQ(g_->metadata().front().first, "u8");
  EXPECT_EQ(g_->metadata().back().first, "arr.nested");
}

// The getters refuse a value of the wrong type with a message naming the key and both types.
TEST_F(MetadataRoundTrip, WrongTypeGettersNameTheProblem) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(message([&] { g_->get_int("string"); }), HasSubstr("'string' is string, expected an integer"));
  EXPECT_THAT(message([&] { g_->get_int("f32"); }), HasSubstr("'f32' is f32, expected an integer"));
  EXPECT_THAT(message([&] { g_->get_string("u32"); }), HasSubstr("'u32' is u32, expected a string"));
  EXPECT_THAT(message([&] { g_->get_float("string"); }), HasSubstr("'string' is string, expected a number"));
  EXPECT_THAT(message([&] { g_->get_bool("u8", false); }), HasSubstr("'u8' is u8, expected a bool"));
  EXPECT_THAT(message([&] { g_->get_int("arr.i32"); }), HasSubstr("'arr.i32' is array"));
  EXPECT_THAT(message([&] { g_->get_string_array("arr.i32"); }), HasSubstr("'arr.i32' is not an array of strings"));
  EXPECT_THAT(message([&] { g_->get_int_array("arr.str"); }), HasSubstr("'arr.str' is not an array of integers"));
  EXPECT_THAT(message([&] { g_->get_float_array("arr.str"); }), HasSubstr("'arr.str' is not an array of numbers"));
  EXPECT_THAT(message([&] { g_->get_float_array("f32"); }), HasSubstr("'f32' is not an array"));
  EXPECT_THAT(message([&] { g_->get_int("nope"); }), HasSubstr("required metadata key 'nope' is missing"));
  EXPECT_THAT(message([&] { g_->tensor("nope"); }), HasSubstr("tensor 'nope' is missing"));
  // A default only applies to a missing key, never to a present one of the wrong type.
  EXPECT_THAT(message([&] { g_->get_int("string", 3); }), HasSubstr("expected an integer"));
}

}  // namespace
}  // namespace ts
