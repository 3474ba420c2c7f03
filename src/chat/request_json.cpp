// Chat requests from JSON (the CLI's --messages file / stdin), validated so that a malformed
// request is reported with the offending message index instead of rendering a broken prompt.
#include "chat/chat_template.h"
#include "util/error.h"

namespace ts::chat {
namespace {

using nlohmann::json;

std::string string_member(const json& m, const char* key, size_t index) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return {};
  if (!it->is_string())
    fail("chat request: message {} field \"{}\" must be a string, got {}", index, key, it->type_name());
  return it->get<std::string>();
}

Message message_from_json(const json& m, size_t index) {
  if (!m.is_object()) fail("chat request: message {} must be an object, got {}", index, m.type_name());
  Message msg;
  msg.role = string_member(m, "role", index);
  if (msg.role.empty()) fail("chat request: message {} has no \"role\"", index);
  msg.content = string_member(m, "content", index);
  msg.thinking = string_member(m, "thinking", index);
  msg.name = string_member(m, "name", index);
  if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
    if (!m["tool_calls"].is_array())
      fail("chat request: message {} field \"tool_calls\" must be an array", index);
    msg.tool_calls = m["tool_calls"];
  }
  return msg;
}

}  // namespace

Request request_from_json(const json& j) {
  Request r;
  const json* messages = &j;
  if (j.is_object()) {
    if (!j.contains("messages")) fail("chat request: object without a \"messages\" array");
    messages = &j["messages"];
    if (j.contains("tools") && !j["tools"].is_null()) {
      if (!j["tools"].is_array()) fail("chat request: \"tools\" must be an array");
      r.tools = j["tools"];
    }
    if (j.contains("reasoning_effort") && !j["reasoning_effort"].is_null()) {
      const json& e = j["reasoning_effort"];
      if (!e.is_string() || (e != "low" && e != "medium" && e != "high"))
        fail("chat request: \"reasoning_effort\" must be \"low\", \"medium\" or \"high\", got {}", e.dump());
      r.reasoning_effort = e.get<std::string>();
    }
    if (j.contains("add_generation_prompt")) {
      if (!j["add_generation_prompt"].is_boolean())
        fail("chat request: \"add_generation_prompt\" must be true or false");
      r.add_generation_prompt = j["add_generation_prompt"].get<bool>();
    }
  }
  if (!messages->is_array())
    fail("chat request: expected an array of messages, got {}", messages->type_name());
  if (messages->empty()) fail("chat request: the message list is empty");
  for (size_t i = 0; i < messages->size(); ++i) r.messages.push_back(message_from_json((*messages)[i], i));
  return r;
}

}  // namespace ts::chat
