#include "server/openai_request.h"

#include <ctime>
#include <random>

#include "server/api_error.h"
#include "util/error.h"

namespace ts::server {
namespace {

using nlohmann::json;

// Typed access to a JSON object's optional members; null counts as absent (clients send nulls for
// defaults). `path` prefixes parameter names in errors ("messages[2].content").
class Fields {
 public:
  Fields(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j.is_object()) bad_param(path_, "'{}' must be a JSON object, got {}", path_.empty() ? "the request body" : path_, j.type_name());
  }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  const json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<double> number(const char* key, double lo, double hi, bool lo_open = false) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) bad_param(name(key), "'{}' must be a number, got {}", name(key), v->type_name());
    const double d = v->get<double>();
    if (d < lo || d > hi || (lo_open && d == lo))
      bad_param(name(key), "'{}' must be in {}{}, {}], got {}", name(key), lo_open ? "(" : "[", lo, hi, d);
    return d;
  }
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) bad_param(name(key), "'{}' must be an integer, got {}", name(key), v->type_name());
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
      bad_param(name(key), "'{}' must be in [{}, {}], got {}", name(key), lo, hi, v->get<uint64_t>());
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) bad_param(name(key), "'{}' must be in [{}, {}], got {}", name(key), lo, hi, i);
    return i;
  }
  std::optional<bool> boolean(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) bad_param(name(key), "'{}' must be true or false, got {}", name(key), v->type_name());
    return v->get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) bad_param(name(key), "'{}' must be a string, got {}", name(key), v->type_name());
    return v->get<std::string>();
  }
  const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string path_;
};

void check_model(const Fields& f, const ServedModel& m, GenerationRequest& g) {
  const std::optional<std::string> model = f.string("model");
  if (model && *model != m.id)
    throw ApiError(404, fmt::format("The model '{}' does not exist; this server serves '{}'", *model, m.id), "model", "model_not_found");
  g.model = model ? *model : m.id;
}

// Sampling and generation settings shared by both endpoints. Absent settings keep the engine's
// defaults (those of `turbospark run`); the seed is random when not given.
void common_settings(const Fields& f, const ServedModel& m, int64_t default_max_tokens, GenerationRequest& g) {
  SamplerConfig& s = g.sampler;
  if (auto v = f.number("temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = f.number("top_p", 0, 1, true)) s.top_p = static_cast<float>(*v);
  if (auto v = f.integer("top_k", 0, m.tok->n_vocab())) s.top_k = static_cast<int>(*v);
  if (auto v = f.number("min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = f.number("presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.number("repeat_penalty", 0, 10, true)) s.repeat_penalty = static_cast<float>(*v);
  if (const json* seed = f.get("seed")) {
    if (!seed->is_number_integer()) bad_param("seed", "'seed' must be an integer, got {}", seed->type_name());
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  } else {
    s.seed = std::random_device{}();
  }
  g.max_tokens = default_max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (auto v = f.integer(key, 1, m.max_tokens)) g.max_tokens = *v;
  if (const json* n = f.get("n"); n && *n != 1) bad_param("n", "only n = 1 is supported");
  if (const json* lb = f.get("logit_bias")) {
    if (!lb->is_object()) bad_param("logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
    if (lb->size() > 4096) bad_param("logit_bias", "'logit_bias' may hold at most 4096 tokens");
    for (const auto& [key, value] : lb->items()) {
      int64_t id = -1;
      if (!key.empty() && key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos) id = std::stoll(key);
      if (id < 0 || id >= m.tok->n_vocab()) bad_param("logit_bias", "'logit_bias' key '{}' is not a token id in [0, {})", key, m.tok->n_vocab());
      if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100)
        bad_param("logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
      g.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
    }
  }
  g.ignore_eos = f.boolean("ignore_eos").value_or(false);  // llama-server's extension, for benchmarks
  g.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    const Fields opts(*so, "stream_options");
    g.include_usage = opts.boolean("include_usage").value_or(false);
  }
  if (const json* stop = f.get("stop")) {
    if (stop->is_string()) {
      g.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 16) {
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!(*stop)[i].is_string()) bad_param("stop", "'stop[{}]' must be a string, got {}", i, (*stop)[i].type_name());
        g.stop.push_back((*stop)[i].get<std::string>());
      }
    } else {
      bad_param("stop", "'stop' must be a string or an array of at most 16 strings");
    }
  }
}

void check_prompt_fits(const GenerationRequest& g, const ServedModel& m, const char* param) {
  if (g.prompt.empty()) bad_param(param, "the prompt has no tokens");
  if (static_cast<int64_t>(g.prompt.size()) >= m.n_ctx)
    throw ApiError(400, fmt::format("The prompt has {} tokens but the context holds {} per request", g.prompt.size(), m.n_ctx),
                   param, "context_length_exceeded");
}

// Message content: a string, or an array of text parts.
std::string content_text(const json& c, const std::string& param) {
  if (c.is_null()) return {};
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad_param(param, "'{}' must be a string or an array of content parts, got {}", param, c.type_name());
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const Fields part(c[i], fmt::format("{}[{}]", param, i));
    const std::string type = part.string("type").value_or("");
    if (type != "text") bad_param(part.name("type"), "content parts of type '{}' are not supported (only text)", type);
    text += part.string("text").value_or("");
  }
  return text;
}

// OpenAI's tool call {"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}} as the
// renderers take it: arguments parsed into JSON, since the templates write them with tojson.
json tool_call(const json& c, const std::string& param) {
  const Fields call(c, param);
  const json* fn = call.get("function");
  if (!fn) bad_param(param, "'{}' needs a 'function'", param);
  const Fields f(*fn, param + ".function");
  const std::optional<std::string> name = f.string("name");
  if (!name || name->empty()) bad_param(f.name("name"), "'{}' must be a non-empty string", f.name("name"));
  json args = json::object();
  if (const json* a = f.get("arguments")) {
    if (a->is_string()) {
      args = json::parse(a->get<std::string>(), nullptr, false);
      if (args.is_discarded()) bad_param(f.name("arguments"), "'{}' is not valid JSON", f.name("arguments"));
    } else {
      args = *a;
    }
  }
  return {{"type", "function"}, {"function", {{"name", *name}, {"arguments", args}}}};
}

chat::Message message(const json& j, size_t i) {
  const std::string path = fmt::format("messages[{}]", i);
  const Fields f(j, path);
  chat::Message m;
  m.role = f.string("role").value_or("");
  if (m.role != "system" && m.role != "developer" && m.role != "user" && m.role != "assistant" && m.role != "tool")
    bad_param(f.name("role"), "'{}' must be system, developer, user, assistant or tool, got '{}'", f.name("role"), m.role);
  if (const json* c = f.get("content")) m.content = content_text(*c, f.name("content"));
  m.name = f.string("name").value_or("");
  if (m.role == "assistant") {
    // vLLM and llama-server return reasoning as reasoning_content; Hugging Face templates call it thinking.
    m.thinking = f.string("reasoning_content").value_or(f.string("thinking").value_or(""));
    if (const json* calls = f.get("tool_calls")) {
      if (!calls->is_array()) bad_param(f.name("tool_calls"), "'{}' must be an array", f.name("tool_calls"));
      m.tool_calls = json::array();
      for (size_t k = 0; k < calls->size(); ++k)
        m.tool_calls.push_back(tool_call((*calls)[k], fmt::format("{}.tool_calls[{}]", path, k)));
      if (m.tool_calls.empty()) m.tool_calls = nullptr;
    }
  }
  return m;
}

json tools(const json& t) {
  if (!t.is_array()) bad_param("tools", "'tools' must be an array, got {}", t.type_name());
  for (size_t i = 0; i < t.size(); ++i) {
    const Fields tool(t[i], fmt::format("tools[{}]", i));
    if (tool.string("type").value_or("function") != "function") bad_param(tool.name("type"), "only function tools are supported");
    const json* fn = tool.get("function");
    if (!fn) bad_param(tool.name("function"), "'{}' is required", tool.name("function"));
    const Fields f(*fn, tool.name("function"));
    if (f.string("name").value_or("").empty()) bad_param(f.name("name"), "'{}' must be a non-empty string", f.name("name"));
    f.string("description");
    if (const json* p = f.get("parameters"); p && !p->is_object()) bad_param(f.name("parameters"), "'{}' must be an object", f.name("parameters"));
  }
  return t;
}

std::string today() {
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  return date;
}

}  // namespace

GenerationRequest parse_chat_request(const json& body, const ServedModel& m) {
  const Fields f(body, "");
  GenerationRequest g;
  g.chat = true;
  check_model(f, m, g);
  if (!m.chat_format)
    throw ApiError(400, "This model has no chat template TurboSpark recognises; restart the server with --chat-template NAME, or use /v1/completions", "messages");
  g.harmony = *m.chat_format == chat::Format::Harmony;
  common_settings(f, m, m.max_tokens, g);
  if (f.boolean("logprobs").value_or(false)) g.top_logprobs = static_cast<int>(f.integer("top_logprobs", 0, 20).value_or(0));
  else if (f.get("top_logprobs")) bad_param("top_logprobs", "'top_logprobs' needs 'logprobs': true");

  chat::Request req;
  const json* msgs = f.get("messages");
  if (!msgs || !msgs->is_array() || msgs->empty()) bad_param("messages", "'messages' must be a non-empty array");
  for (size_t i = 0; i < msgs->size(); ++i) req.messages.push_back(message((*msgs)[i], i));
  if (auto effort = f.string("reasoning_effort")) {
    if (*effort != "low" && *effort != "medium" && *effort != "high")
      bad_param("reasoning_effort", "'reasoning_effort' must be low, medium or high, got '{}'", *effort);
    req.reasoning_effort = *effort;
  }
  std::string choice = "auto";
  if (const json* tc = f.get("tool_choice")) {
    if (!tc->is_string() || (*tc != "auto" && *tc != "none"))
      bad_param("tool_choice", "only \"auto\" and \"none\" are supported for 'tool_choice'");
    choice = tc->get<std::string>();
  }
  if (const json* t = f.get("tools"); t && choice == "auto" && !t->empty()) {
    req.tools = tools(*t);
    if (!g.harmony)
      bad_param("tools", "this model's chat format ({}) has no tool-calling format", chat::format_name(*m.chat_format));
  }
  chat::Context ctx = m.chat_context;
  ctx.date = today();
  std::string text;
  try {
    text = chat::render(*m.chat_format, req, ctx);
  } catch (const Error& e) {
    bad_param("messages", "{}", e.what());
  }
  g.prompt = m.tok->encode(text, false, true);
  check_prompt_fits(g, m, "messages");
  return g;
}

GenerationRequest parse_completion_request(const json& body, const ServedModel& m) {
  const Fields f(body, "");
  GenerationRequest g;
  check_model(f, m, g);
  common_settings(f, m, std::min<int64_t>(16, m.max_tokens), g);  // OpenAI's default for completions
  if (auto lp = f.integer("logprobs", 0, 5)) g.top_logprobs = static_cast<int>(*lp);
  if (f.boolean("echo").value_or(false)) bad_param("echo", "'echo' is not supported");
  if (f.get("suffix")) bad_param("suffix", "'suffix' is not supported");
  if (const json* b = f.get("best_of"); b && *b != 1) bad_param("best_of", "only best_of = 1 is supported");

  const json* p = f.get("prompt");
  if (!p) bad_param("prompt", "'prompt' is required");
  // One prompt: text, or token ids; a list holding exactly one of them is the same.
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    g.prompt = m.tok->encode(p->get<std::string>(), true, false);  // as `turbospark run` does
  } else if (p->is_array()) {
    for (size_t i = 0; i < p->size(); ++i) {
      const json& id = (*p)[i];
      if (!id.is_number_integer()) bad_param("prompt", "'prompt' must be a string, token ids, or a list of one of them; item {} is {}", i, id.type_name());
      const int64_t v = id.is_number_unsigned() && id.get<uint64_t>() > INT32_MAX ? -1 : id.get<int64_t>();
      if (v < 0 || v >= m.tok->n_vocab()) bad_param("prompt", "token id {} at prompt[{}] is outside the vocabulary [0, {})", id.dump(), i, m.tok->n_vocab());
      g.prompt.push_back(static_cast<int32_t>(v));
    }
  } else {
    bad_param("prompt", "'prompt' must be a string or an array of token ids, got {}", p->type_name());
  }
  check_prompt_fits(g, m, "prompt");
  return g;
}

}  // namespace ts::server
