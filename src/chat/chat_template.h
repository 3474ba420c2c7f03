// Chat prompt rendering without a Jinja interpreter. A GGUF model ships its prompt format as a Jinja
// program (tokenizer.chat_template); instead of interpreting it we recognise which of a few known
// formats it implements by distinctive marker strings and render that format natively, reproducing
// the reference templates' output byte for byte (tests/data/templates holds the references).
//
// Unknown templates: detect() returns nullopt rather than guessing, because a wrong format silently
// degrades the model's answers; the CLI then stops and asks for `--chat-template NAME`, where NAME is
// one of the names parse_format_name() accepts.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ts::chat {

struct Message {
  std::string role;      // system, developer, user, assistant, tool
  std::string content;
  std::string thinking;  // assistant reasoning (Harmony's analysis channel); empty = none
  nlohmann::json tool_calls;  // null or array of {"type":"function","function":{"name","arguments"}}
  std::string name;      // tool name on role "tool" messages; informational
};

struct Request {
  std::vector<Message> messages;
  bool add_generation_prompt = true;
  std::string reasoning_effort;  // "", low, medium, high; "" = the template's default (medium)
  nlohmann::json tools;          // null or array of OpenAI-style function definitions
};

enum class Format { ChatML, Llama3, Gemma, Phi3, Harmony };

// nullopt = not recognised (see the top of this file).
std::optional<Format> detect(std::string_view chat_template);
// "chatml", "llama3", "gemma", "phi3", "harmony"; nullopt for anything else.
std::optional<Format> parse_format_name(std::string_view name);
std::string_view format_name(Format);

// What a rendering needs besides the messages. Formats that begin with a BOS token (Llama-3, Gemma,
// Phi-3) emit bos_text verbatim, so the tokenizer must map it back to the BOS special token.
struct Context {
  std::string bos_text;
  std::string date;            // "YYYY-MM-DD", Harmony's "Current date:" line
  std::string default_system;  // ChatML: system turn inserted when the first message is not one
};

// The template text contributes only the default system prompt some ChatML templates embed (SmolLM2,
// Qwen2.5): the literal following '<|im_start|>system\n' up to '<|im_end|>' when it is a constant
// string, not a message's content. Every other format ignores the template text.
Context context_for(std::string_view chat_template, std::string bos_text, std::string date);

// Throws ts::Error where the reference template raises (e.g. Gemma's non-alternating roles,
// Harmony's tool result without a preceding call) and for tool use in formats without tools.
std::string render(Format f, const Request& r, const Context& ctx);

// Accepts [{"role":..,"content":..}, ...] or {"messages": [...], "tools": [...],
// "reasoning_effort": "...", "add_generation_prompt": bool}.
Request request_from_json(const nlohmann::json& j);

}  // namespace ts::chat
