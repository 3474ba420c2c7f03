#include "server/openai_response.h"

#include <fmt/format.h>

#include <ctime>
#include <random>

namespace ts::server {
namespace {

using nlohmann::json;

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
json chat_logprobs(const Tokenizer& tok, const std::vector<SampledToken>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    const std::string text = tok.token_bytes(t.id);
    json top = json::array();
    for (const auto& alt : t.top) {
      const std::string a = tok.token_bytes(alt.id);
      top.push_back({{"token", a}, {"logprob", alt.logprob}, {"bytes", bytes_of(a)}});
    }
    content.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
json completion_logprobs(const Tokenizer& tok, const std::vector<SampledToken>& tokens, size_t offset) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const auto& t : tokens) {
    const std::string text = tok.token_bytes(t.id);
    toks.push_back(text);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& alt : t.top) top[tok.token_bytes(alt.id)] = alt.logprob;
    tops.push_back(top);
    offs.push_back(offset);
    offset += text.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json tool_calls_json(const Reply& reply, const std::vector<ToolCallDelta>& deltas) {
  json calls = json::array();
  for (const auto& d : deltas) {
    json c = {{"index", d.index}, {"function", {{"arguments", d.arguments}}}};
    if (d.first) {
      const ToolCall& call = reply.tool_calls()[d.index];
      c["id"] = call.id;
      c["type"] = "function";
      c["function"]["name"] = call.name;
    }
    calls.push_back(c);
  }
  return calls;
}

}  // namespace

ResponseMeta new_response_meta(bool chat, const std::string& model, bool logprobs) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  ResponseMeta m;
  m.chat = chat;
  m.id = fmt::format("{}-{:016x}", chat ? "chatcmpl" : "cmpl", rng());
  m.created = static_cast<int64_t>(std::time(nullptr));
  m.model = model;
  m.logprobs = logprobs;
  return m;
}

json usage_json(const JobResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

json chunk_json(const ResponseMeta& m, const Tokenizer& tok, const Reply& reply, const ReplyDelta& d, bool first,
                const std::optional<std::string>& finish_reason) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason ? json(*finish_reason) : json()}, {"logprobs", nullptr}};
  if (m.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!d.content.empty() || (first && d.reasoning.empty() && d.tool_calls.empty())) delta["content"] = d.content;
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.tool_calls.empty()) delta["tool_calls"] = tool_calls_json(reply, d.tool_calls);
    choice["delta"] = delta;
    if (m.logprobs && !d.tokens.empty()) choice["logprobs"] = chat_logprobs(tok, d.tokens);
  } else {
    choice["text"] = d.content;
    if (m.logprobs && !d.tokens.empty()) choice["logprobs"] = completion_logprobs(tok, d.tokens, reply.content().size() - d.content.size());
  }
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})}};
}

json usage_chunk_json(const ResponseMeta& m, const JobResult& r) {
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array()},
          {"usage", usage_json(r)}};
}

json response_json(const ResponseMeta& m, const Tokenizer& tok, const Reply& reply, const ReplyDelta& all,
                   const std::string& finish_reason, const JobResult& r) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", nullptr}};
  if (m.chat) {
    json msg = {{"role", "assistant"}, {"content", reply.content()}};
    if (!reply.reasoning().empty()) msg["reasoning_content"] = reply.reasoning();
    if (!reply.tool_calls().empty()) {
      json calls = json::array();
      for (const auto& c : reply.tool_calls())
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      msg["tool_calls"] = calls;
      if (reply.content().empty()) msg["content"] = nullptr;  // as OpenAI answers a pure tool call
    }
    choice["message"] = msg;
    if (m.logprobs) choice["logprobs"] = chat_logprobs(tok, all.tokens);
  } else {
    choice["text"] = reply.content();
    if (m.logprobs) choice["logprobs"] = completion_logprobs(tok, all.tokens, 0);
  }
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})},
          {"usage", usage_json(r)}};
}

std::string dump_json(const nlohmann::json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace ts::server
