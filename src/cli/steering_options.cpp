#include "cli/steering_options.h"

#include "util/error.h"

namespace ts::cli {

void add_steering_options(CLI::App* sub, SteeringOptions& o, CaptureOptions capture) {
  sub->add_option("--steering", o.files, "control vector GGUF (llama.cpp format), optionally :SCALE; repeatable, they add up");
  sub->add_option("--steering-layers", o.layers, "steer blocks START:END (inclusive; default 1:last)");
  sub->add_option("--steering-mode", o.mode, "add (llama.cpp), ablate, clamp or renorm");
  sub->add_option("--steering-target", o.target, "clamp mode: the component along the direction is set to this");
  sub->add_option("--steering-gate", o.gate, "leave a token unchanged when |component along the direction| is below this");
  if (capture == CaptureOptions::None) return;
  sub->add_option("--capture-residual", o.capture_path, "write the residual after every layer at the last prompt token to FILE.json + FILE.f32");
  if (capture == CaptureOptions::EveryPosition) sub->add_flag("--capture-all", o.capture_all, "with --capture-residual: capture every position");
}

std::unique_ptr<Steering> SteeringOptions::load(Backend& be, int64_t n_layer, int64_t n_embd) const {
  SteeringSpec spec;
  spec.mode = SteeringSpec::parse_mode(mode);
  if (files.empty()) {
    if (!layers.empty() || mode != "add" || target != 0 || gate != 0)
      fail("--steering-layers, --steering-mode, --steering-target and --steering-gate need --steering FILE");
    return nullptr;
  }
  for (const std::string& f : files) spec.files.push_back(SteeringSpec::parse_file(f));
  if (!layers.empty()) {
    const size_t colon = layers.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument(layers);
      size_t used = 0;
      spec.layer_start = std::stoll(layers.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument(layers);
      spec.layer_end = std::stoll(layers.substr(colon + 1), &used);
      if (used != layers.size() - colon - 1) throw std::invalid_argument(layers);
    } catch (const std::exception&) {
      fail("--steering-layers '{}': expected START:END, e.g. 4:12", layers);
    }
  }
  spec.target = target;
  spec.gate = gate;
  return std::make_unique<Steering>(spec, be, n_layer, n_embd);
}

}  // namespace ts::cli
