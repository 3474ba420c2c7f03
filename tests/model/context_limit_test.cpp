// The context limit is a hard bound: a forward call that would need more KV positions than the cache
// has is a ts::Error that says so, whether the excess comes in one prefill or one decode step too
// many, and the failed call fills nothing. (`logits` with more tokens than --ctx is refused before
// any forward call: tests/cli/cli_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_harness.h"
#include "model/forward.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

// The error message of `fn`, or "" when it does not throw ts::Error.
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class ContextLimit : public testing::Test {
 protected:
  std::unique_ptr<Backend> be_ = make_cpu_backend(1);
  std::unique_ptr<Model> model_ = Model::load(test::models_dir() + "/llama-dense-f32.gguf", *be_);
  KvCache kv_{*be_, model_->hp(), 8};
  std::vector<int32_t> ids_ = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> logits_ = std::vector<float>(ids_.size() * model_->hp().n_vocab);
};

TEST_F(ContextLimit, PrefillPastTheLimitThrows) {
  Forward fwd(*model_, *be_, ForwardOptions{.max_batch = 9});
  EXPECT_THAT(error_of([&] { fwd.run(kv_, ids_.data(), 9, true, logits_.data()); }), HasSubstr("context"));
  EXPECT_EQ(kv_.n_past, 0);
}

TEST_F(ContextLimit, DecodeStepPastTheLimitThrows) {
  Forward fwd(*model_, *be_, ForwardOptions{.max_batch = 1});
  for (int i = 0; i < 8; ++i) ASSERT_EQ(error_of([&] { fwd.run(kv_, &ids_[i], 1, false, logits_.data()); }), "") << "token " << i;
  EXPECT_THAT(error_of([&] { fwd.run(kv_, &ids_[8], 1, false, logits_.data()); }), HasSubstr("context"));
  EXPECT_EQ(kv_.n_past, 8);
}

}  // namespace
}  // namespace ts
