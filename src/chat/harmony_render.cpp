// Harmony rendering, following the reference template (tests/data/templates/openai-gpt-oss-120b.jinja)
// branch for branch, including where it raises.
#include "chat/harmony_render.h"

#include "chat/harmony_tools.h"
#include "chat/python_json.h"
#include "util/error.h"

namespace ts::chat {
namespace {

bool has_tool_calls(const Message& m) { return m.tool_calls.is_array() && !m.tool_calls.empty(); }
bool has_tools(const Request& r) { return r.tools.is_array() && !r.tools.empty(); }

std::string system_message(const Request& r, const Context& ctx) {
  if (ctx.date.empty()) fail("Harmony prompt: the current date (YYYY-MM-DD) is required");
  std::string out =
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: " + ctx.date + "\n\nReasoning: " +
      (r.reasoning_effort.empty() ? "medium" : r.reasoning_effort) +
      "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.";
  if (has_tools(r)) out += "\nCalls to these tools must go to the commentary channel: 'functions'.";
  return out + "<|end|>";
}

// Channel tags in history would let a message forge other messages; the template refuses them.
void check_no_channel_tags(const std::string& text, const char* field) {
  if (text.find("<|channel|>analysis<|message|>") != std::string::npos ||
      text.find("<|channel|>final<|message|>") != std::string::npos)
    fail("chat request: an assistant message's {} contains <|channel|> tags; pass reasoning in "
         "\"thinking\" and the answer in \"content\" instead", field);
}

std::string analysis(const std::string& text) {
  return "<|start|>assistant<|channel|>analysis<|message|>" + text + "<|end|>";
}

// Renders one assistant tool call and returns the called function's name. Only the first call of
// a message is rendered: the template assumes one call per message.
std::string tool_call(const Message& m, bool later_final_answer, std::string& out) {
  const nlohmann::json* call = &m.tool_calls[0];
  if (call->is_object() && call->contains("function")) call = &(*call)["function"];
  if (!call->is_object() || !call->contains("name") || !(*call)["name"].is_string() ||
      !call->contains("arguments"))
    fail("chat request: tool call needs a \"name\" and \"arguments\": {}", m.tool_calls[0].dump());
  if (!m.content.empty() && !m.thinking.empty())
    fail("chat request: an assistant message with tool calls cannot have both content and thinking");
  // Reasoning that led to a call is kept until a later final answer makes it obsolete.
  if (!later_final_answer && !m.content.empty()) out += analysis(m.content);
  if (!later_final_answer && !m.thinking.empty()) out += analysis(m.thinking);
  std::string name = (*call)["name"];
  std::string content_type = call->value("content_type", std::string("json"));
  out += "<|start|>assistant to=functions." + name + "<|channel|>commentary " + content_type +
         "<|message|>" + python_json((*call)["arguments"]) + "<|call|>";
  return name;
}

}  // namespace

std::string render_harmony(const Request& r, const Context& ctx) {
  std::string out = system_message(r, ctx);
  const std::vector<Message>& msgs = r.messages;
  size_t first = 0;
  std::string developer;
  if (!msgs.empty() && (msgs[0].role == "developer" || msgs[0].role == "system")) {
    developer = msgs[0].content;
    first = 1;
  }
  if (!developer.empty() || has_tools(r)) {
    out += "<|start|>developer<|message|>";
    if (!developer.empty()) out += "# Instructions\n\n" + developer + "\n\n";
    if (has_tools(r)) out += "# Tools\n\n" + harmony_tool_namespace(r.tools);
    out += "<|end|>";
  }
  std::optional<std::string> last_call;  // a tool result is attributed to the latest call
  for (size_t i = first; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    bool last = i + 1 == msgs.size();
    if (m.role == "assistant") {
      check_no_channel_tags(m.content, "content");
      check_no_channel_tags(m.thinking, "thinking");
      if (has_tool_calls(m)) {
        bool later_final = false;
        for (size_t k = i + 1; k < msgs.size(); ++k)
          later_final |= msgs[k].role == "assistant" && !has_tool_calls(msgs[k]);
        last_call = tool_call(m, later_final, out);
      } else if (last && !r.add_generation_prompt) {
        // A finished conversation (training layout): the last answer keeps its reasoning and ends
        // with <|return|>, the token the model emits to stop.
        if (!m.thinking.empty()) out += analysis(m.thinking);
        out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|return|>";
      } else {
        // Reasoning of past turns is dropped, as the model never sees it at inference time.
        out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|end|>";
        last_call.reset();
      }
    } else if (m.role == "tool") {
      if (!last_call)
        fail("chat request: message {} has role \"tool\" but no assistant tool call precedes it", i);
      out += "<|start|>functions." + *last_call + " to=assistant<|channel|>commentary<|message|>" +
             python_json(m.content) + "<|end|>";
    } else if (m.role == "user") {
      out += "<|start|>user<|message|>" + m.content + "<|end|>";
    }
  }
  if (r.add_generation_prompt) out += "<|start|>assistant";
  return out;
}

}  // namespace ts::chat
