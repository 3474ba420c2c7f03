// Reading the reference templates and renderings under TS_TEST_DATA/templates.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ts::chat::test {

inline std::string read_template_file(const std::string& name) {
  std::ifstream in(std::string(TS_TEST_DATA) + "/templates/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing test data file templates/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_template_json(const std::string& name) {
  return nlohmann::json::parse(read_template_file(name));
}

}  // namespace ts::chat::test
