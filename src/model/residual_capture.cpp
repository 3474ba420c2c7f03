#include "model/residual_capture.h"

#include <nlohmann/json.hpp>

#include "util/output_file.h"

namespace ts {

std::string ResidualCapture::sidecar_path(const std::string& json_path) {
  const std::string ext = ".json";
  if (json_path.size() > ext.size() && json_path.compare(json_path.size() - ext.size(), ext.size(), ext) == 0)
    return json_path.substr(0, json_path.size() - ext.size()) + ".f32";
  return json_path + ".f32";
}

void ResidualCapture::write(const std::string& json_path) const {
  if (positions.empty()) return;
  const std::string sidecar = sidecar_path(json_path);
  nlohmann::json j;
  j["layers"] = layers;
  j["hidden"] = hidden;
  j["snapshots"] = snapshots();
  j["dtype"] = "float32";
  j["layout"] = "[snapshot][layer][hidden]";
  j["positions"] = positions;
  const size_t slash = sidecar.find_last_of('/');
  j["data"] = slash == std::string::npos ? sidecar : sidecar.substr(slash + 1);  // relative to the header
  // Two files that name each other: neither can be a stream.
  const OutputOptions files{.allow_stdout = false};
  write_output_file(sidecar, data.data(), data.size() * sizeof(float), files);
  const std::string text = j.dump() + "\n";
  write_output_file(json_path, text.data(), text.size(), files);
}

}  // namespace ts
