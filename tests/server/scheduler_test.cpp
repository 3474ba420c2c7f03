// The scheduler against the one-sequence path: a request's tokens are the same alone, batched with
// others (greedy and seeded sampling), with its prompt prefilled in chunks between other sequences'
// decode steps, and with its prefix reused from a finished slot's cache; on CUDA, whose rows' bytes
// depend on their step, the same alone and batched through the steps plan_step makes there.
// Cancellation (while decoding and while prefilling) ends a request within a step and frees its KV
// cache; a full context ends it with ContextFull. The model is a tiny random-weight llama with a
// real 32000-token vocabulary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "cuda/require_cuda.h"
#include "runtime/generator.h"
#include "server/scheduler.h"
#include "synth/synthesize.h"

namespace ts::server {
namespace {

using namespace std::chrono_literals;

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string((std::filesystem::temp_directory_path() / fmt::format("ts-scheduler-{}.gguf", ::getpid())).string());
    synth::SynthConfig c = synth::preset_config("llama", "tiny");
    c.embd_type = c.dense_type;  // as `turbospark synth` does
    c.vocab_from = std::string(TS_TEST_DATA) + "/tokenizers/ggml-vocab-llama-spm.gguf";
    ThreadPool pool(2);
    synth::synthesize(c, *path_, pool, synth::SynthOptions{true, false});
    be_ = make_cpu_backend(2).release();
    model_ = Model::load(*path_, *be_).release();
    tok_ = Tokenizer::from_gguf(model_->gguf()).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_;
    delete be_;
    std::filesystem::remove(*path_);
    delete path_;
  }

  static std::vector<int32_t> prompt(int i, size_t n = 12) {
    std::vector<int32_t> p = tok_->encode(fmt::format("Request number {} asks about rivers and mountains", i), true, false);
    while (p.size() < n) p.push_back(static_cast<int32_t>(1000 + (p.size() * 37 + i * 11) % 20000));
    return p;
  }

  static std::shared_ptr<Job> job(std::vector<int32_t> p, int64_t max_tokens, float temp, uint64_t seed) {
    auto j = std::make_shared<Job>();
    j->prompt = std::move(p);
    j->params.max_tokens = max_tokens;
    j->sampler.temperature = temp;
    j->sampler.seed = seed;
    return j;
  }

  struct Outcome {
    std::vector<int32_t> ids;
    std::string text;
    JobResult result;
  };
  static Outcome collect(Job& j) {
    Outcome o;
    std::vector<SampledToken> toks;
    while (true) {
      std::optional<JobResult> r = j.wait(toks, 100ms);
      if (r) {
        o.result = *r;
        break;
      }
    }
    for (const auto& t : toks) {
      o.ids.push_back(t.id);
      o.text += t.text;
    }
    o.text += o.result.tail;
    return o;
  }

  // The text of the CLI path (Generator) for the same request.
  static std::string cli_text(const std::vector<int32_t>& p, int64_t max_tokens, float temp, uint64_t seed) {
    SamplerConfig c;
    c.temperature = temp;
    c.seed = seed;
    Sampler s(c, tok_->n_vocab());
    Generator g(*model_, *be_, *tok_, 512, ForwardOptions{});
    std::string text;
    g.generate(p, max_tokens, s, [&](const std::string& piece) {
      text += piece;
      return true;
    });
    return text;
  }

  // Six requests (greedy and seeded sampling) one at a time through one slot, or all at once.
  static constexpr int kJobs = 6;
  static std::vector<int32_t> request_prompt(int i) { return prompt(i, 10 + 7 * i); }
  static std::vector<Outcome> serve(const Model& model, Backend& be, SchedulerOptions o, bool together, int64_t* steps = nullptr) {
    o.parallel = together ? kJobs : 1;
    o.n_ctx = 256;
    Scheduler s(model, be, *tok_, o);
    std::vector<std::shared_ptr<Job>> jobs;
    std::vector<Outcome> out;
    for (int i = 0; i < kJobs; ++i) {
      jobs.push_back(job(request_prompt(i), 24, i % 2 ? 0.9f : 0.0f, 100 + i));
      EXPECT_TRUE(s.submit(jobs.back()));
      if (!together) out.push_back(collect(*jobs.back()));
    }
    if (together)
      for (auto& j : jobs) out.push_back(collect(*j));
    if (steps) *steps = s.stats().steps.load();
    return out;
  }

  static std::string* path_;
  static Backend* be_;
  static Model* model_;
  static Tokenizer* tok_;
};
std::string* SchedulerTest::path_ = nullptr;
Backend* SchedulerTest::be_ = nullptr;
Model* SchedulerTest::model_ = nullptr;
Tokenizer* SchedulerTest::tok_ = nullptr;

TEST_F(SchedulerTest, BatchedRequestsGenerateWhatTheyGenerateAlone) {
  const std::vector<Outcome> alone = serve(*model_, *be_, SchedulerOptions{}, false);
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(alone[i].result.finish, Finish::MaxTokens);
    EXPECT_EQ(alone[i].ids.size(), 24u);
    EXPECT_EQ(alone[i].text, cli_text(request_prompt(i), 24, i % 2 ? 0.9f : 0.0f, 100 + i)) << "request " << i;
  }
  // All at once, prompts prefilled 5 rows at a time while the others decode.
  SchedulerOptions o;
  o.forward.max_batch = 32;
  o.prefill_chunk = 5;
  int64_t steps = 0;
  const std::vector<Outcome> together = serve(*model_, *be_, o, true, &steps);
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(together[i].ids, alone[i].ids) << "request " << i;
  EXPECT_LT(steps, kJobs * 25) << "the requests did not share forward calls";
}

// On CUDA a prompt's bytes depend on its chunks (the tensor cores' products over a chunk's rows), so
// alone means on an idle server with the same options: prompts prefilled 5 rows at a time (2-row
// chunks take the exact products), then decode steps of up to six rows.
TEST_F(SchedulerTest, OnCudaBatchedRequestsGenerateWhatTheyGenerateAlone) {
  TS_REQUIRE_CUDA();
  const auto be = make_backend("cuda", 2);
  const auto model = Model::load(*path_, *be);
  SchedulerOptions o;
  o.forward.max_batch = 32;
  o.prefill_chunk = 5;
  const std::vector<Outcome> alone = serve(*model, *be, o, false);
  int64_t steps = 0;
  const std::vector<Outcome> together = serve(*model, *be, o, true, &steps);
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(alone[i].ids.size(), 24u) << "request " << i;
    EXPECT_EQ(together[i].ids, alone[i].ids) << "request " << i;
  }
  EXPECT_LT(steps, kJobs * 25) << "the requests did not share decode steps";
}

// Decode rows and prompt chunks share steps where rows are independent; elsewhere they take turns,
// one prompt's chunk at a time.
TEST(PlanStep, SharesStepsOnlyWhereRowsAreIndependent) {
  using V = std::vector<int64_t>;
  // Two decoding, two prefilling (30 and 7 rows left); batches of 32, chunks of 5.
  EXPECT_EQ(plan_step({0, 0, 30, 7}, 32, 5, true, false), (V{1, 1, 5, 0}));
  EXPECT_EQ(plan_step({0, 0, 2, 7}, 32, 5, true, false), (V{1, 1, 2, 3}));
  EXPECT_EQ(plan_step({30, 7}, 32, 5, true, false), (V{30, 2}));  // nothing decodes: the whole batch
  EXPECT_EQ(plan_step({0, 0, 30, 7}, 32, 5, false, false), (V{1, 1, 0, 0}));
  EXPECT_EQ(plan_step({0, 0, 30, 7}, 32, 5, false, true), (V{0, 0, 5, 0}));
  EXPECT_EQ(plan_step({0, 0, 3, 7}, 32, 5, false, true), (V{0, 0, 3, 0}));
  EXPECT_EQ(plan_step({30, 7}, 32, 5, false, false), (V{5, 0}));  // chunks as when other streams run
  EXPECT_EQ(plan_step({30, 7}, 4, 5, false, true), (V{4, 0}));
  EXPECT_EQ(plan_step({0, 0, 0}, 32, 5, false, true), (V{1, 1, 1}));
}

TEST_F(SchedulerTest, PrefixOfAFinishedRequestIsReused) {
  SchedulerOptions o;
  o.parallel = 2;
  o.n_ctx = 256;
  Scheduler s(*model_, *be_, *tok_, o);
  const std::vector<int32_t> first = prompt(1, 40);
  auto a = job(first, 8, 0.0f, 1);
  ASSERT_TRUE(s.submit(a));
  const Outcome oa = collect(*a);
  EXPECT_EQ(oa.result.cached_tokens, 0);
  // The next turn: the first prompt, the reply, and more.
  std::vector<int32_t> second = first;
  second.insert(second.end(), oa.ids.begin(), oa.ids.end());
  for (int i = 0; i < 5; ++i) second.push_back(2000 + i);
  auto b = job(second, 8, 0.0f, 1);
  ASSERT_TRUE(s.submit(b));
  const Outcome ob = collect(*b);
  // Everything but the reply's last token (sampled, never run through the model) was cached.
  EXPECT_EQ(ob.result.cached_tokens, static_cast<int64_t>(first.size() + oa.ids.size() - 1));
  EXPECT_EQ(ob.result.prompt_tokens, static_cast<int64_t>(second.size()));

  SchedulerOptions fresh_opt = o;
  Scheduler fresh(*model_, *be_, *tok_, fresh_opt);
  auto c = job(second, 8, 0.0f, 1);
  ASSERT_TRUE(fresh.submit(c));
  const Outcome oc = collect(*c);
  EXPECT_EQ(oc.result.cached_tokens, 0);
  EXPECT_EQ(ob.ids, oc.ids) << "reusing the cached prefix changed the output";
}

TEST_F(SchedulerTest, CancelWhileDecodingFreesTheCache) {
  SchedulerOptions o;
  o.parallel = 2;
  o.n_ctx = 4096;
  Scheduler s(*model_, *be_, *tok_, o);
  auto j = job(prompt(3), 100000, 0.8f, 7);
  ASSERT_TRUE(s.submit(j));
  std::vector<SampledToken> toks;
  while (toks.size() < 3) ASSERT_FALSE(j->wait(toks, 100ms));
  EXPECT_GT(s.stats().kv_bytes.load(), 0);
  j->cancel();
  const Outcome out = collect(*j);
  EXPECT_EQ(out.result.finish, Finish::Cancelled);
  EXPECT_LT(out.result.completion_tokens, 1000);
  EXPECT_EQ(s.stats().kv_bytes.load(), 0);
  EXPECT_EQ(s.stats().active.load(), 0);
  // The scheduler goes on serving.
  auto k = job(prompt(4), 4, 0.0f, 1);
  ASSERT_TRUE(s.submit(k));
  EXPECT_EQ(collect(*k).ids.size(), 4u);
}

TEST_F(SchedulerTest, CancelWhilePrefillingStopsBetweenChunks) {
  SchedulerOptions o;
  o.parallel = 1;
  o.n_ctx = 4096;
  o.forward.max_batch = 4;  // a 2000-token prompt takes 500 steps
  Scheduler s(*model_, *be_, *tok_, o);
  auto j = job(prompt(5, 2000), 4, 0.0f, 1);
  ASSERT_TRUE(s.submit(j));
  while (s.stats().kv_positions.load() < 8) std::this_thread::sleep_for(1ms);
  j->cancel();
  const Outcome out = collect(*j);
  EXPECT_EQ(out.result.finish, Finish::Cancelled);
  EXPECT_EQ(out.result.completion_tokens, 0);
  EXPECT_LT(s.stats().steps.load(), 400);
  EXPECT_EQ(s.stats().kv_bytes.load(), 0);
}

TEST_F(SchedulerTest, FullContextEndsTheRequest) {
  SchedulerOptions o;
  o.parallel = 1;
  o.n_ctx = 48;
  Scheduler s(*model_, *be_, *tok_, o);
  auto j = job(prompt(6, 40), 1000, 0.0f, 1);
  ASSERT_TRUE(s.submit(j));
  const Outcome out = collect(*j);
  EXPECT_EQ(out.result.finish, Finish::ContextFull);
  EXPECT_EQ(out.result.completion_tokens, 48 - 40 + 1);  // the last sampled token needs no room
}

TEST_F(SchedulerTest, AFullQueueRefusesJobs) {
  SchedulerOptions o;
  o.parallel = 1;
  o.max_queue = 1;
  Scheduler s(*model_, *be_, *tok_, o);
  int refused = 0;
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(job(prompt(i), 200, 0.0f, 1));
    refused += s.submit(jobs.back()) ? 0 : 1;
  }
  EXPECT_GE(refused, 1);
  for (auto& j : jobs) j->cancel();
}

}  // namespace
}  // namespace ts::server
