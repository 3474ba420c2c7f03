// Format recognition from the template text, format names, and the Context a template implies.
#include "chat/chat_template.h"

#include <array>
#include <utility>

namespace ts::chat {
namespace {

bool has(std::string_view s, std::string_view marker) { return s.find(marker) != std::string_view::npos; }

constexpr std::array<std::pair<Format, std::string_view>, 5> kNames{{
    {Format::ChatML, "chatml"},
    {Format::Llama3, "llama3"},
    {Format::Gemma, "gemma"},
    {Format::Phi3, "phi3"},
    {Format::Harmony, "harmony"},
}};

// Reads the string literal text that starts at `pos` up to `end_marker`, undoing backslash escapes.
// nullopt when the literal closes first: then the text continues with an expression (for example
// a message's content), not a constant.
std::optional<std::string> literal_until(std::string_view t, size_t pos, std::string_view end_marker) {
  std::string out;
  while (pos < t.size()) {
    if (t.substr(pos).starts_with(end_marker)) return out;
    char c = t[pos];
    if (c == '\'' || c == '"') return std::nullopt;
    if (c == '\\' && pos + 1 < t.size()) {
      char e = t[++pos];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      out += c;
    }
    ++pos;
  }
  return std::nullopt;
}

std::string default_system_prompt(std::string_view t) {
  constexpr std::string_view open = "<|im_start|>system";
  for (size_t at = t.find(open); at != std::string_view::npos; at = t.find(open, at + 1)) {
    size_t p = at + open.size();
    // The newline after the role is a real newline or a "\n" escape, depending on how the
    // template's author wrote the literal.
    if (t.substr(p).starts_with("\n")) p += 1;
    else if (t.substr(p).starts_with("\\n")) p += 2;
    else continue;
    std::optional<std::string> text = literal_until(t, p, "<|im_end|>");
    if (text && !text->empty()) return *text;
  }
  return {};
}

}  // namespace

std::optional<Format> detect(std::string_view t) {
  // Harmony first: its template also contains <|end|>, which Phi-3 uses.
  if (has(t, "<|channel|>") && has(t, "<|start|>")) return Format::Harmony;
  if (has(t, "<|im_start|>")) return Format::ChatML;
  if (has(t, "<|start_header_id|>")) return Format::Llama3;
  if (has(t, "<start_of_turn>")) return Format::Gemma;
  if (has(t, "<|user|>") && has(t, "<|end|>")) return Format::Phi3;
  return std::nullopt;
}

std::optional<Format> parse_format_name(std::string_view name) {
  for (const auto& [f, n] : kNames)
    if (n == name) return f;
  return std::nullopt;
}

std::string_view format_name(Format f) {
  for (const auto& [g, n] : kNames)
    if (g == f) return n;
  return "unknown";
}

Context context_for(std::string_view chat_template, std::string bos_text, std::string date) {
  return Context{std::move(bos_text), std::move(date), default_system_prompt(chat_template)};
}

}  // namespace ts::chat
