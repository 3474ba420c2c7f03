// Residual-stream captures: the residual at the output of every layer (after the FFN residual join
// and any steering edit) for chosen tokens, to build steering directions from. Written as a JSON
// header plus a raw float32 sidecar, layout [snapshot][layer][hidden].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct ResidualCapture {
  int64_t layers = 0, hidden = 0;
  std::vector<float> data;         // [snapshot][layer][hidden]
  std::vector<int64_t> positions;  // position of each snapshot in its sequence

  int64_t snapshots() const { return static_cast<int64_t>(positions.size()); }
  // Writes `json_path` and its sidecar (the path with .json replaced by .f32, else + ".f32").
  // Nothing is written when nothing was captured.
  void write(const std::string& json_path) const;
  static std::string sidecar_path(const std::string& json_path);
};

}  // namespace ts
