// OpenAI response bodies: chat.completion / chat.completion.chunk and text_completion objects, usage
// (with cached prompt tokens) and log-probabilities. Token texts can be partial UTF-8; serialise with
// dump_json(), which replaces invalid bytes instead of throwing.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/reply.h"

namespace ts::server {

struct ResponseMeta {
  bool chat = true;
  std::string id;  // chatcmpl-... / cmpl-...
  int64_t created = 0;
  std::string model;
  bool logprobs = false;
};
ResponseMeta new_response_meta(bool chat, const std::string& model, bool logprobs);

nlohmann::json usage_json(const JobResult& r);

// One streamed chunk: the delta (the first chunk also carries the role), and the finish reason on
// the last one.
nlohmann::json chunk_json(const ResponseMeta& m, const Tokenizer& tok, const Reply& reply, const ReplyDelta& d, bool first,
                          const std::optional<std::string>& finish_reason);
// The usage chunk that ends a stream when stream_options.include_usage is set.
nlohmann::json usage_chunk_json(const ResponseMeta& m, const JobResult& r);
// A whole (non-streamed) response; `all` holds every token of the reply for log-probabilities.
nlohmann::json response_json(const ResponseMeta& m, const Tokenizer& tok, const Reply& reply, const ReplyDelta& all,
                             const std::string& finish_reason, const JobResult& r);

std::string dump_json(const nlohmann::json& j);

}  // namespace ts::server
