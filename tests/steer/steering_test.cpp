// Residual capture and the steering edit modes, checked against a direct computation on captured
// residuals: capture leaves the logits bytes unchanged; steering one block changes that block's
// residual exactly as each mode's formula says; bad control vectors are clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "cli/cli_harness.h"
#include "gguf/gguf_writer.h"
#include "model/forward.h"
#include "runtime/token_file.h"
#include "steer/steering.h"
#include "util/error.h"

namespace ts {
namespace {

using ::testing::HasSubstr;
using Mode = SteerParams::Mode;

struct Outputs {
  std::vector<float> logits;
  ResidualCapture capture;
  int64_t n_embd = 0, n_layer = 0;
};

// Every position's logits and residuals of a fixture, prefilled in chunks of `chunk`.
Outputs run_fixture(const std::string& name, const SteeringSpec& spec, bool capture, int64_t chunk = 64) {
  auto be = make_cpu_backend(2);
  auto model = Model::load(test::models_dir() + "/" + name + ".gguf", *be);
  const std::vector<int32_t> ids = read_token_file(test::models_dir() + "/" + name + ".tokens.txt");
  const int64_t n = static_cast<int64_t>(ids.size()), V = model->hp().n_vocab;
  std::unique_ptr<Steering> steering;
  if (!spec.empty()) steering = std::make_unique<Steering>(spec, *be, model->hp().n_layer, model->hp().n_embd);
  ForwardOptions fo;
  fo.max_batch = chunk;
  fo.steering = steering.get();
  KvCache kv(*be, model->hp(), n);
  Forward fwd(*model, *be, fo);
  Outputs r;
  r.n_embd = model->hp().n_embd;
  r.n_layer = model->hp().n_layer;
  r.logits.resize(n * V);
  for (int64_t i = 0; i < n; i += chunk) {
    const int64_t m = std::min(chunk, n - i);
    const SeqStep s{&kv, ids.data() + i, m, true, r.logits.data() + i * V, capture ? &r.capture : nullptr, true};
    fwd.run(std::span<const SeqStep>(&s, 1));
  }
  return r;
}

TEST(ResidualCapture, LeavesTheLogitsBytesUnchanged) {
  for (const char* name : {"llama-dense-q4_k_m", "gpt-oss-mxfp4", "qwen3moe-q8_0"}) {
    const Outputs plain = run_fixture(name, {}, false), captured = run_fixture(name, {}, true, 7);
    EXPECT_TRUE(test::same_bytes(plain.logits, captured.logits)) << name;
    EXPECT_EQ(captured.capture.snapshots(), 40) << name;
    for (int64_t i = 0; i < 40; ++i) ASSERT_EQ(captured.capture.positions[i], i);
  }
}

TEST(ResidualCapture, TheLastLayerThroughTheHeadGivesTheLogits) {
  auto be = make_cpu_backend(1);
  auto model = Model::load(test::models_dir() + "/llama-dense-f32.gguf", *be);
  const Outputs r = run_fixture("llama-dense-f32", {}, true);
  const HParams& h = model->hp();
  Act x = be->alloc(1, h.n_embd), y = be->alloc(1, h.n_vocab);
  for (int64_t t : {0, 17, 39}) {
    const float* snap = r.capture.data.data() + (t * h.n_layer + h.n_layer - 1) * h.n_embd;
    std::copy(snap, snap + h.n_embd, x.data);
    be->rms_norm(x, model->output_norm(), h.norm_eps, h.n_embd, x);
    be->matmul(model->output(), x, y);
    EXPECT_EQ(0, std::memcmp(y.data, r.logits.data() + t * h.n_vocab, h.n_vocab * sizeof(float))) << "token " << t;
  }
  be->release(x);
  be->release(y);
}

// Writes a control vector with one direction per listed layer (deterministic values).
std::string write_cvec(const std::string& path, const std::vector<int64_t>& layers, int64_t width,
                       GgmlType type = GgmlType::F32, std::vector<uint64_t> dims = {}) {
  GgufWriter w(path);
  w.set_string("general.architecture", "controlvector");
  for (int64_t l : layers) w.add_tensor("direction." + std::to_string(l), type, dims.empty() ? std::vector<uint64_t>{uint64_t(width)} : dims);
  w.begin_data();
  for (int64_t l : layers) {
    std::vector<float> v(width);
    for (int64_t j = 0; j < width; ++j) v[j] = std::sin(0.37 * j + l) * 0.9f + (j % 7 == 0 ? 0.6f : 0.0f);
    if (type == GgmlType::F32) {
      w.write(v.data(), v.size() * sizeof(float));
    } else {
      std::vector<uint8_t> zeros(row_bytes(type, width));
      w.write(zeros.data(), zeros.size());
    }
  }
  w.finish();
  return path;
}

// The edit each mode makes to one residual row x, computed directly in double.
std::vector<double> expected_edit(const float* x, const std::vector<float>& d, Mode mode, double alpha, double target,
                                  double gate) {
  const size_t n = d.size();
  double dd = 0, dx = 0, xx = 0;
  for (size_t j = 0; j < n; ++j) {
    dd += double(d[j]) * d[j];
    dx += double(d[j]) * x[j];
    xx += double(x[j]) * x[j];
  }
  const double norm = std::sqrt(dd), c = dx / norm;
  std::vector<double> out(x, x + n);
  if (std::abs(c) < gate) return out;
  for (size_t j = 0; j < n; ++j) {
    const double u = d[j] / norm;
    switch (mode) {
      case Mode::Add: out[j] += alpha * d[j]; break;
      case Mode::Ablate: out[j] -= alpha * c * u; break;
      case Mode::Clamp: out[j] += (target - c) * u; break;
      case Mode::Renorm: out[j] -= alpha * c * u; break;
    }
  }
  if (mode == Mode::Renorm) {
    double after = 0;
    for (double v : out) after += v * v;
    if (after > 0)
      for (double& v : out) v *= std::sqrt(xx / after);
  }
  return out;
}

struct ModeCase {
  Mode mode;
  float alpha, target, gate;
  const char* name;
};

// Only block 1 is steered: its captured residual with steering must be the direct computation's
// edit of its captured residual without steering (blocks 0 and 1 see the same inputs either way).
// The steered run goes `chunk` tokens per step (1: every token as a decode step). Returns how many
// of the 40 rows were edited.
int expect_block_one_edited(const std::string& fixture, const ModeCase& mc, int64_t chunk) {
  test::ScratchDir dir;
  const Outputs plain = run_fixture(fixture, {}, true);
  const int64_t W = plain.n_embd, L = plain.n_layer, layer = 1;
  SteeringSpec spec;
  spec.files = {{write_cvec(dir.file("v.gguf"), {1, 2}, W), mc.alpha}};
  spec.layer_start = spec.layer_end = layer;
  spec.mode = mc.mode;
  spec.target = mc.target;
  spec.gate = mc.gate;
  const Outputs steered = run_fixture(fixture, spec, true, chunk);
  const auto g = GgufFile::open(dir.file("v.gguf"));
  const GgufTensor& t = g->tensor("direction.1");
  const std::vector<float> d(reinterpret_cast<const float*>(t.data), reinterpret_cast<const float*>(t.data) + W);
  int edited = 0;
  for (int64_t s = 0; s < 40; ++s) {
    const float* before = plain.capture.data.data() + (s * L + layer) * W;
    const float* after = steered.capture.data.data() + (s * L + layer) * W;
    const std::vector<double> want = expected_edit(before, d, mc.mode, mc.alpha, mc.target, mc.gate);
    double err = 0, scale = 0;
    bool same = true;
    for (int64_t j = 0; j < W; ++j) {
      err = std::max(err, std::abs(after[j] - want[j]));
      scale = std::max(scale, std::abs(want[j]));
      same = same && after[j] == before[j];
    }
    EXPECT_LE(err, 2e-6 * scale) << fixture << " snapshot " << s;
    edited += !same;
    // Block 0 is never touched.
    EXPECT_EQ(0, std::memcmp(plain.capture.data.data() + s * L * W, steered.capture.data.data() + s * L * W, W * 4))
        << fixture;
  }
  return edited;
}

class SteeringModes : public testing::TestWithParam<ModeCase> {};

TEST_P(SteeringModes, EditBlockOneAsTheFormulaSays) {
  const ModeCase mc = GetParam();
  const int edited = expect_block_one_edited("llama-dense-f32", mc, 64);
  if (mc.gate > 0) {
    EXPECT_GT(edited, 5) << "the gate must let some rows through";
    EXPECT_LT(edited, 35) << "the gate must hold some rows back";
  } else {
    EXPECT_EQ(edited, 40);
  }
}

// Every family, token by token as in decode: the edit sits in the shared forward pass, so a family
// whose block ends differently (gpt-oss's and Qwen3's routed FFN, Gemma 3's post-norms) must still be
// steered after its residual join.
class SteeringFamilies : public testing::TestWithParam<const char*> {};

TEST_P(SteeringFamilies, AddAndRenormInDecodeSteps) {
  EXPECT_EQ(expect_block_one_edited(GetParam(), ModeCase{Mode::Add, 0.7f, 0, 0, "add"}, 1), 40);
  EXPECT_EQ(expect_block_one_edited(GetParam(), ModeCase{Mode::Renorm, 1.0f, 0, 0, "renorm"}, 5), 40);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SteeringFamilies,
                         testing::Values("gpt-oss-mxfp4", "qwen3moe-q8_0", "llama-moe-q8_0", "gemma3-q8_0",
                                         "qwen3-dense-f16", "llama-dense-q4_k_m"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

INSTANTIATE_TEST_SUITE_P(Modes, SteeringModes,
                         testing::Values(ModeCase{Mode::Add, 0.7f, 0, 0, "add"}, ModeCase{Mode::Add, 0.7f, 0, 1.0f, "add_gated"},
                                         ModeCase{Mode::Ablate, 1.0f, 0, 0, "ablate"},
                                         ModeCase{Mode::Ablate, 0.5f, 0, 1.0f, "ablate_half_gated"},
                                         ModeCase{Mode::Clamp, 1.0f, 2.5f, 0, "clamp"},
                                         ModeCase{Mode::Renorm, 1.0f, 0, 0, "renorm"},
                                         ModeCase{Mode::Renorm, 0.6f, 0, 1.0f, "renorm_gated"}),
                         [](const auto& info) { return std::string(info.param.name); });

std::string steering_error(const std::string& file, SteeringSpec spec = {}) {
  auto be = make_cpu_backend(1);
  spec.files = {{file, 1.0f}};
  try {
    Steering s(spec, *be, 3, 128);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SteeringErrors, NameTheFileAndTensor) {
  test::ScratchDir dir;
  EXPECT_THAT(steering_error(write_cvec(dir.file("w.gguf"), {1}, 64)), HasSubstr("'direction.1' has 64 values, the model's width is 128"));
  EXPECT_THAT(steering_error(write_cvec(dir.file("t.gguf"), {2}, 128, GgmlType::F16)), HasSubstr("'direction.2' has type F16"));
  EXPECT_THAT(steering_error(write_cvec(dir.file("d.gguf"), {1}, 128, GgmlType::F32, {64, 2})), HasSubstr("'direction.1' has 2 dimensions"));
  EXPECT_THAT(steering_error(write_cvec(dir.file("z.gguf"), {0}, 128)), HasSubstr("'direction.0' names layer 0"));
  EXPECT_THAT(steering_error(write_cvec(dir.file("b.gguf"), {3}, 128)), HasSubstr("'direction.3' names layer 3, beyond"));
  EXPECT_THAT(steering_error(write_cvec(dir.file("b.gguf"), {3}, 128)), HasSubstr(dir.file("b.gguf")));
  SteeringSpec range;
  range.layer_start = 0;
  EXPECT_THAT(steering_error(write_cvec(dir.file("ok.gguf"), {1}, 128), range), HasSubstr("--steering-layers 0:2"));
  EXPECT_THROW(SteeringSpec::parse_mode("subtract"), Error);
  EXPECT_EQ(SteeringSpec::parse_file("a:b.gguf:-0.5").path, "a:b.gguf");
  EXPECT_EQ(SteeringSpec::parse_file("a:b.gguf:-0.5").scale, -0.5f);
  EXPECT_EQ(SteeringSpec::parse_file("dir:1/v.gguf").path, "dir:1/v.gguf");
}

}  // namespace
}  // namespace ts
