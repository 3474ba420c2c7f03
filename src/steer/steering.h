// Steering: control vectors in llama.cpp's format (a GGUF of F32 `direction.N` tensors, N counted
// from 1, applied to the residual stream after block N) turned into per-layer residual edits
// (backend SteerParams). Several files, each with its own scale, add up.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ts {

struct SteeringSpec {
  struct File {
    std::string path;
    float scale = 1;
  };
  std::vector<File> files;
  int64_t layer_start = 1, layer_end = -1;  // blocks steered, inclusive; -1: through the last block
  SteerParams::Mode mode = SteerParams::Mode::Add;
  float target = 0;  // clamp mode
  float gate = 0;    // skip rows whose |d^ . x| is below this

  bool empty() const { return files.empty(); }
  // "FILE" or "FILE:SCALE" (the scale is the text after the last ':' when it parses as a number).
  static File parse_file(const std::string& arg);
  static SteerParams::Mode parse_mode(const std::string& name);  // add | ablate | clamp | renorm
};

class Steering {
 public:
  // Reads and checks every file (width, type, shape, layer index); directions go to `be`.
  Steering(const SteeringSpec& spec, Backend& be, int64_t n_layer, int64_t n_embd);
  // The edits after block `layer`, in the order they apply.
  const std::vector<SteerParams>& after_layer(int64_t layer) const { return layers_[layer]; }

 private:
  std::vector<std::vector<SteerParams>> layers_;
};

}  // namespace ts
