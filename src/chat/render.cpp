// Rendering of the turn-based formats (ChatML, Llama-3, Gemma, Phi-3) through one shared flow, and
// dispatch to Harmony, which has a structure of its own. Each TurnFormat row holds only what its
// reference template does differently.
#include "chat/chat_template.h"
#include "chat/harmony_render.h"
#include "util/error.h"

namespace ts::chat {
namespace {

enum class SystemMode {
  Turn,             // a turn like any other
  TurnOrDefault,    // a turn; Context::default_system stands in when the first message is not one
  FirstUserPrefix,  // no system role: its text + "\n\n" opens the first user turn
};

struct TurnFormat {
  bool bos;  // the prompt starts with Context::bos_text
  SystemMode system;
  bool trim;         // message content is whitespace-trimmed (Jinja's `| trim`)
  bool alternating;  // roles must go user, assistant, user, ... (the template raises otherwise)
  std::optional<std::string> (*open)(const std::string& role);  // nullopt = role not rendered
  std::string_view (*close)(const std::string& role);
  std::string_view generation_prompt;
};

const TurnFormat kChatML{
    false, SystemMode::TurnOrDefault, false, false,
    [](const std::string& role) -> std::optional<std::string> { return "<|im_start|>" + role + "\n"; },
    [](const std::string&) -> std::string_view { return "<|im_end|>\n"; },
    "<|im_start|>assistant\n"};

const TurnFormat kLlama3{
    true, SystemMode::Turn, true, false,
    [](const std::string& role) -> std::optional<std::string> {
      return "<|start_header_id|>" + role + "<|end_header_id|>\n\n";
    },
    [](const std::string&) -> std::string_view { return "<|eot_id|>"; },
    "<|start_header_id|>assistant<|end_header_id|>\n\n"};

const TurnFormat kGemma{
    true, SystemMode::FirstUserPrefix, true, true,
    [](const std::string& role) -> std::optional<std::string> {
      return "<start_of_turn>" + (role == "assistant" ? std::string("model") : role) + "\n";
    },
    [](const std::string&) -> std::string_view { return "<end_of_turn>\n"; },
    "<start_of_turn>model\n"};

// Phi-3's template renders only user and assistant messages (the system message is dropped) and
// opens the assistant turn after every user turn, so it has no separate generation prompt.
const TurnFormat kPhi3{
    true, SystemMode::Turn, false, false,
    [](const std::string& role) -> std::optional<std::string> {
      if (role == "user") return "<|user|>\n";
      if (role == "assistant") return "";
      return std::nullopt;
    },
    [](const std::string& role) -> std::string_view {
      return role == "user" ? "<|end|>\n<|assistant|>\n" : "<|end|>\n";
    },
    ""};

// Python's str.strip() for the ASCII whitespace that occurs in prompts.
std::string_view trim(std::string_view s) {
  constexpr std::string_view ws = " \t\n\r\v\f";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Only Harmony's template knows tools; elsewhere they would be dropped silently, which hides why
// the model never calls them.
void reject_tools(Format f, const Request& r) {
  bool calls = false;
  for (const Message& m : r.messages) calls |= m.tool_calls.is_array() && !m.tool_calls.empty();
  if ((r.tools.is_array() && !r.tools.empty()) || calls)
    fail("chat template '{}' has no tool-calling format; tools need the harmony format", format_name(f));
}

std::string render_turns(const TurnFormat& tf, const Request& r, const Context& ctx) {
  std::string out = tf.bos ? ctx.bos_text : "";
  const std::vector<Message>& msgs = r.messages;
  size_t first = 0;
  std::string first_user_prefix;
  bool has_system = msgs[0].role == "system";
  if (tf.system == SystemMode::FirstUserPrefix && has_system) {
    first_user_prefix = msgs[0].content + "\n\n";
    first = 1;
  }
  if (tf.system == SystemMode::TurnOrDefault && !has_system && !ctx.default_system.empty())
    out += *tf.open("system") + ctx.default_system + std::string(tf.close("system"));
  for (size_t i = first; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    if (tf.alternating && (m.role == "user") != ((i - first) % 2 == 0))
      fail("chat request: this template needs roles alternating user/assistant/user/..., message {} "
           "has role \"{}\"", i, m.role);
    std::optional<std::string> open = tf.open(m.role);
    if (!open) continue;
    out += *open;
    if (i == first) out += first_user_prefix;
    out += tf.trim ? trim(m.content) : std::string_view(m.content);
    out += tf.close(m.role);
  }
  if (r.add_generation_prompt) out += tf.generation_prompt;
  return out;
}

}  // namespace

std::string render(Format f, const Request& r, const Context& ctx) {
  if (r.messages.empty()) fail("chat request has no messages");
  if (f == Format::Harmony) return render_harmony(r, ctx);
  reject_tools(f, r);
  switch (f) {
    case Format::ChatML: return render_turns(kChatML, r, ctx);
    case Format::Llama3: return render_turns(kLlama3, r, ctx);
    case Format::Gemma: return render_turns(kGemma, r, ctx);
    case Format::Phi3: return render_turns(kPhi3, r, ctx);
    case Format::Harmony: break;
  }
  fail("unhandled chat format {}", static_cast<int>(f));
}

}  // namespace ts::chat
