// Steering and residual-capture options, shared by every command that runs the model.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "steer/steering.h"

namespace ts::cli {

struct SteeringOptions {
  std::vector<std::string> files;  // FILE[:SCALE]
  std::string layers;              // START:END
  std::string mode = "add";
  float target = 0, gate = 0;
  std::string capture_path;  // --capture-residual FILE.json
  bool capture_all = false;  // logits: every position, not only the last

  // The steering edits, or null when no --steering was given.
  std::unique_ptr<Steering> load(Backend& be, int64_t n_layer, int64_t n_embd) const;
};

// Which capture options a command offers: none (serve: captures are per generation, a server runs
// many at once), the last prompt token (run, chat), or also every position (logits).
enum class CaptureOptions { None, LastToken, EveryPosition };
void add_steering_options(CLI::App* sub, SteeringOptions& o, CaptureOptions capture);

}  // namespace ts::cli
