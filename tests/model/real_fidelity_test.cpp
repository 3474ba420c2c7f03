// The fast paths' fidelity on the real default model (SmolLM2-135M-Instruct Q4_1), teacher-forced
// over llama.cpp's greedy continuations of tests/data/real (349 positions), from the exact path
// (which is within 1e-11 of the float64 reference there): the default (int8) stays under llama.cpp's
// own mean KL from the float64 reference on these positions, 4.4e-3 (shared/tools/np_reference.py);
// --precision int16 within 1e-5 of exact. Measured: int8 1.8e-3, int16 about 1e-7. The model comes from the cache
// (`turbospark fetch`, see support/real_models.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/forward.h"
#include "model/parity_util.h"
#include "support/real_models.h"

namespace ts {
namespace {

std::vector<std::vector<int32_t>> real_sequences(std::string& model_path) {
  std::ifstream in(std::string(TS_TEST_DATA) + "/real/smollm2-135m-instruct-q4_1.json");
  const auto j = nlohmann::json::parse(in);
  model_path = cached_model_path(j["model"].get<std::string>());
  std::vector<std::vector<int32_t>> out;
  for (const auto& c : j["cases"]) {
    auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto more = c["greedy_ids"].get<std::vector<int32_t>>();
    ids.insert(ids.end(), more.begin(), more.end());
    out.push_back(ids);
  }
  return out;
}

std::vector<float> all_logits(const std::string& path, const std::vector<std::vector<int32_t>>& seqs, Precision p, KvType kv) {
  auto be = make_cpu_backend(2, p, kv);
  auto model = Model::load(path, *be);
  const int64_t V = model->hp().n_vocab;
  std::vector<float> out;
  for (const auto& ids : seqs) {
    const int64_t n = static_cast<int64_t>(ids.size());
    KvCache cache(*be, model->hp(), n);
    Forward fwd(*model, *be, ForwardOptions{.max_batch = n});
    std::vector<float> l(static_cast<size_t>(n * V));
    fwd.run(cache, ids.data(), n, true, l.data());
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(Fidelity, Int16PathOnTheDefaultModelStaysNextToExact) {
  std::string path;
  const auto seqs = real_sequences(path);
  TS_REQUIRE_REAL_MODEL(path);
  const std::vector<float> exact = all_logits(path, seqs, Precision::Exact, KvType::F32);
  const int64_t V = 49152;
  for (KvType kv : {KvType::F32, KvType::F16}) {
    const test::Distance d = test::distance(exact, all_logits(path, seqs, Precision::Int16, kv), V);
    std::printf("int16, %s KV cache: %s (llama.cpp: mean KL 4.4e-3 from the float64 reference)\n",
                kv == KvType::F32 ? "f32" : "f16", test::describe(d).c_str());
    EXPECT_LE(d.mean_kl, 1e-5) << test::describe(d);
    EXPECT_GE(d.top1, 0.99) << test::describe(d);
  }}

// The default, --precision int8 (8-bit activation codes in the FFNs, int16 elsewhere, f16 KV cache), on the same
// positions: measured mean KL 1.79e-3 from the exact path (median 1.3e-3, top-1 0.960), under half of
// llama.cpp's 4.4e-3, whose activation rounding it shares in the FFNs; with 8-bit codes in every
// product it was 4.54e-3, level with llama.cpp. Bound 2.5e-3; a wrong scale or layout puts every row
// far past it.
TEST(Fidelity, DefaultInt8PathOnTheDefaultModelStaysCloserThanLlamaCpp) {
  std::string path;
  const auto seqs = real_sequences(path);
  TS_REQUIRE_REAL_MODEL(path);
  const std::vector<float> exact = all_logits(path, seqs, Precision::Exact, KvType::F32);
  const test::Distance d = test::distance(exact, all_logits(path, seqs, Precision::Int8, KvType::F16), 49152);
  std::printf("int8, f16 KV cache: %s (llama.cpp: mean KL 4.4e-3 from the float64 reference)\n", test::describe(d).c_str());
  EXPECT_LE(d.mean_kl, 2.5e-3) << test::describe(d);
  EXPECT_GE(d.top1, 0.94) << test::describe(d);
}

}  // namespace
}  // namespace ts
