// Steering in the default mode is llama.cpp's --control-vector: the same files, scales and layers
// give llama.cpp's steered logits within the shared pass rule, with llama.cpp's steered logits as the
// reference (recorded in tests/data/steering by llama.cpp's llama_set_adapter_cvec, one batch,
// f16 KV cache). Each check also shows the steering matters: unsteered logits are far from them.
#include <gtest/gtest.h>

#include "model/forward.h"
#include "model/parity_util.h"
#include "runtime/model_cache.h"
#include "runtime/token_file.h"
#include "steer/steering.h"

namespace ts {
namespace {

std::string steering_data(const std::string& name) { return std::string(TS_TEST_DATA) + "/steering/" + name; }

// Teacher-forced logits of every token, in one prefill (or one token at a time).
std::vector<float> logits_of(const std::string& model_path, const std::vector<int32_t>& ids, const SteeringSpec& spec,
                             bool sequential = false) {
  auto be = make_cpu_backend(2);
  auto model = Model::load(model_path, *be);
  const int64_t n = static_cast<int64_t>(ids.size()), V = model->hp().n_vocab;
  std::unique_ptr<Steering> steering;
  if (!spec.empty()) steering = std::make_unique<Steering>(spec, *be, model->hp().n_layer, model->hp().n_embd);
  ForwardOptions fo;
  fo.max_batch = sequential ? 1 : n;
  fo.steering = steering.get();
  KvCache kv(*be, model->hp(), n);
  Forward fwd(*model, *be, fo);
  std::vector<float> out(n * V);
  for (int64_t i = 0; i < n; i += fo.max_batch) fwd.run(kv, ids.data() + i, fo.max_batch, true, out.data() + i * V);
  return out;
}

TEST(SteeringParity, AddModeMatchesLlamaCppOnAFixture) {
  const std::string model = test::models_dir() + "/llama-dense-f32.gguf";
  const std::vector<int32_t> ids = read_token_file(test::models_dir() + "/llama-dense-f32.tokens.txt");
  SteeringSpec spec;
  spec.files = {{steering_data("llama-dense-a.cvec.gguf"), 1.5f}, {steering_data("llama-dense-b.cvec.gguf"), -0.8f}};
  const std::vector<float> ref = test::read_floats(steering_data("llama-dense-f32.cvec.llamacpp.logits.f32"));
  const std::vector<float> ours = logits_of(model, ids, spec);
  const test::Distance d = test::distance(ref, ours);
  // F32 weights: the shared rule's relative L2 bound (we measure about 4.3e-4).
  EXPECT_LE(d.rel_l2, 1e-3) << test::describe(d);
  EXPECT_EQ(d.top1, 1.0);
  EXPECT_GT(test::distance(ref, logits_of(model, ids, {})).rel_l2, 0.1) << "the vectors must change the logits";
  // Prefill and decode steer alike.
  EXPECT_TRUE(test::same_bytes(ours, logits_of(model, ids, spec, true)));
}

TEST(SteeringParity, AddModeMatchesLlamaCppOnTheDefaultModel) {
  const std::string model = default_model_path();
  const std::vector<int32_t> ids = {19556, 28, 957, 1462, 314};  // "Hello, my name is"
  const int64_t V = 49152;
  SteeringSpec spec;
  spec.files = {{steering_data("smollm2-happy.cvec.gguf"), 0.3f}};
  const std::vector<float> ref_plain = test::read_floats(steering_data("smollm2-plain.llamacpp.logits.f32"));
  const std::vector<float> ref_steered = test::read_floats(steering_data("smollm2-happy.llamacpp.logits.f32"));
  const test::Distance plain = test::distance(ref_plain, logits_of(model, ids, {}), V);
  const test::Distance steered = test::distance(ref_steered, logits_of(model, ids, spec), V);
  // Quantized weights: llama.cpp's distance from us unsteered (its int8 activations; 2.7e-3) is the
  // baseline, and steering must not move us further from it than the shared rule's 1.5x (3.2e-3).
  EXPECT_LE(steered.mean_kl, 1.5 * plain.mean_kl) << test::describe(steered) << " vs " << test::describe(plain);
  EXPECT_GE(steered.top1, plain.top1 - 0.05);
  EXPECT_GT(test::distance(ref_steered, logits_of(model, ids, {}), V).mean_kl, 100 * plain.mean_kl)
      << "the vector must change the logits";
}

}  // namespace
}  // namespace ts
