#include "steer/steering.h"

#include <cmath>
#include <cstring>
#include <map>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ts {
namespace {

// The block a `direction.N` tensor steers, or an error naming the file and tensor.
int64_t direction_layer(const std::string& file, const std::string& name, int64_t n_layer) {
  const std::string prefix = "direction.";
  int64_t n = -1;
  if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > prefix.size() && name.size() < prefix.size() + 10 &&
      name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
    n = std::stoll(name.substr(prefix.size()));
  if (n < 0) fail("'{}': tensor '{}' is not a control-vector direction (expected direction.N)", file, name);
  // llama.cpp's convention: direction.N is added after block N; block 0's output cannot be steered.
  if (n == 0) fail("'{}': tensor '{}' names layer 0, which cannot be steered (directions count from 1)", file, name);
  if (n >= n_layer) fail("'{}': tensor '{}' names layer {}, beyond the model's {} blocks (0..{})", file, name, n, n_layer, n_layer - 1);
  return n;
}

}  // namespace

SteeringSpec::File SteeringSpec::parse_file(const std::string& arg) {
  const size_t colon = arg.rfind(':');
  if (colon != std::string::npos && colon + 1 < arg.size()) {
    const std::string tail = arg.substr(colon + 1);
    char* end = nullptr;
    const float scale = std::strtof(tail.c_str(), &end);
    if (end == tail.c_str() + tail.size()) {
      if (!std::isfinite(scale)) fail("--steering '{}': the scale must be finite", arg);
      return File{arg.substr(0, colon), scale};
    }
  }
  return File{arg, 1.0f};
}

SteerParams::Mode SteeringSpec::parse_mode(const std::string& name) {
  static const std::map<std::string, SteerParams::Mode> modes = {{"add", SteerParams::Mode::Add},
                                                                 {"ablate", SteerParams::Mode::Ablate},
                                                                 {"clamp", SteerParams::Mode::Clamp},
                                                                 {"renorm", SteerParams::Mode::Renorm}};
  const auto it = modes.find(name);
  if (it == modes.end()) fail("unknown steering mode '{}' (add, ablate, clamp or renorm)", name);
  return it->second;
}

Steering::Steering(const SteeringSpec& spec, Backend& be, int64_t n_layer, int64_t n_embd) : layers_(n_layer) {
  const int64_t end = spec.layer_end < 0 ? n_layer - 1 : spec.layer_end;
  if (spec.layer_start < 1 || spec.layer_start > end || end >= n_layer)
    fail("--steering-layers {}:{} is outside the blocks that can be steered (1..{})", spec.layer_start, end, n_layer - 1);
  const bool add = spec.mode == SteerParams::Mode::Add;
  // Add mode sums every file's scaled directions per layer, in file order, as llama.cpp does; the
  // projection modes apply one edit per file and layer, in file order.
  std::vector<std::vector<float>> sum(add ? n_layer : 0);
  for (const SteeringSpec::File& f : spec.files) {
    const auto g = GgufFile::open(f.path);
    if (g->tensors().empty()) fail("'{}': no direction tensors in this control-vector file", f.path);
    for (const GgufTensor& t : g->tensors()) {
      const int64_t l = direction_layer(f.path, t.name, n_layer);
      if (t.type != GgmlType::F32) fail("'{}': tensor '{}' has type {}; directions must be F32", f.path, t.name, type_name(t.type));
      if (t.dims.size() != 1) fail("'{}': tensor '{}' has {} dimensions; a direction is 1-D", f.path, t.name, t.dims.size());
      if (static_cast<int64_t>(t.dims[0]) != n_embd)
        fail("'{}': tensor '{}' has {} values, the model's width is {}", f.path, t.name, t.dims[0], n_embd);
      if (l < spec.layer_start || l > end) continue;
      std::vector<float> v(n_embd);
      std::memcpy(v.data(), t.data, n_embd * sizeof(float));
      double sq = 0;
      for (float x : v) {
        if (!std::isfinite(x)) fail("'{}': tensor '{}' holds a non-finite value", f.path, t.name);
        sq += static_cast<double>(x) * x;
      }
      if (add) {
        if (sum[l].empty()) sum[l].assign(n_embd, 0.0f);
        for (int64_t j = 0; j < n_embd; ++j) sum[l][j] += v[j] * f.scale;
        continue;
      }
      if (sq == 0) fail("'{}': tensor '{}' is all zeros: it has no direction to project on", f.path, t.name);
      SteerParams p;
      p.mode = spec.mode;
      p.direction = be.upload_f32(v);
      p.norm = std::sqrt(sq);
      p.alpha = f.scale;
      p.target = spec.target;
      p.gate = spec.gate;
      layers_[l].push_back(p);
    }
  }
  for (size_t l = 0; l < sum.size(); ++l) {
    if (sum[l].empty()) continue;
    double sq = 0;
    for (float x : sum[l]) sq += static_cast<double>(x) * x;
    SteerParams p;
    p.mode = SteerParams::Mode::Add;
    p.direction = be.upload_f32(sum[l]);
    p.norm = sq > 0 ? std::sqrt(sq) : 1.0;
    p.gate = spec.gate;
    layers_[l].push_back(p);
  }
}

}  // namespace ts
