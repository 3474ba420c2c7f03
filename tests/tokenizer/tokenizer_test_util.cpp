#include "tokenizer_test_util.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ts::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tokenizer_data(const std::string& name) { return std::string(TS_TEST_DATA) + "/tokenizers/" + name; }

std::vector<VocabCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string raw = read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      cases.push_back({raw.substr(pos), {}});
      break;
    }
    cases.push_back({raw.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream out(read_file(out_path));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(out, line)) throw std::runtime_error(out_path + ": fewer lines than inputs");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.expected.push_back(id);
  }
  if (std::getline(out, line)) throw std::runtime_error(out_path + ": more lines than inputs");
  return cases;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  const std::string s = read_file(path);
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field)), field.clear(), any = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      rows.back().push_back(std::move(field)), field.clear(), any = false;
      rows.emplace_back();
    } else {
      field += c, any = true;
    }
  }
  if (!field.empty() || any) rows.back().push_back(std::move(field));
  while (!rows.empty() && rows.back().empty()) rows.pop_back();
  return rows;
}

std::vector<int32_t> parse_id_list(const std::string& json_array) {
  return nlohmann::json::parse(json_array).get<std::vector<int32_t>>();
}

}  // namespace ts::test
