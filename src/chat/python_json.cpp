// Python-style JSON serialisation for template output (see python_json.h).
#include "chat/python_json.h"

namespace ts::chat {
namespace {

void write(const nlohmann::json& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      write(nlohmann::json(k), out);
      out += ": ";
      write(v, out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      write(j[i], out);
    }
    out += ']';
  } else {
    // Scalars: nlohmann escapes strings exactly like json.dumps(ensure_ascii=False) does.
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace

std::string python_json(const nlohmann::json& j) {
  std::string out;
  write(j, out);
  return out;
}

}  // namespace ts::chat
