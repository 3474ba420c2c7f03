// --phases, --phases-json, --router-hist and --router-trace for the commands that run a model:
// installs the process-wide phase clock and router recorder for the run's lifetime, and reports
// when the run is over.
#pragma once
#include <cstdint>
#include <memory>

#include "cli/options.h"
#include "moe/router_recorder.h"
#include "util/phase_clock.h"

namespace ts::cli {

class RunInstruments {
 public:
  RunInstruments(const ModelOptions& o, const Model& m);  // after the model is loaded
  ~RunInstruments();
  RunInstruments(const RunInstruments&) = delete;
  RunInstruments& operator=(const RunInstruments&) = delete;

  // Starts the phase clock and the expert counters afresh (the router histogram keeps counting):
  // what came before, a warm-up, is left out of the report.
  void restart();
  // tokens: tokens that went through the model since the start or restart (prefilled and decoded).
  // Prints the phases to stderr and writes the requested files.
  void report(int64_t tokens);

 private:
  const ModelOptions& o_;
  const Model& m_;
  std::unique_ptr<PhaseClock> clock_;
  std::unique_ptr<RouterRecorder> router_;
  ExpertStats start_;
};

}  // namespace ts::cli
