// OpenAI request bodies -> what the scheduler runs. Every parameter is type- and range-checked here,
// and anything wrong is an ApiError (400) naming the parameter, before a job exists. Unknown fields
// are ignored (clients send many optional ones); known ones TurboSpark cannot honour (n > 1,
// echo, suffix, forced tool choice) are refused rather than silently ignored.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace ts::server {

// What request parsing needs to know about the served model.
struct ServedModel {
  std::string id;                          // the "model" name clients use
  const Tokenizer* tok = nullptr;
  std::optional<chat::Format> chat_format; // nullopt: no chat template, chat completions are refused
  chat::Context chat_context;              // its date is replaced by the day of each request
  int64_t n_ctx = 0;                       // positions per sequence
  int64_t max_tokens = 0;                  // the most tokens one request may generate
};

struct GenerationRequest {
  bool chat = false;
  bool harmony = false;       // the reply is Harmony (channels, tool calls)
  bool stream = false;
  bool include_usage = false; // stream_options.include_usage
  int top_logprobs = -1;      // -1: no log-probabilities
  std::vector<int32_t> prompt;
  SamplerConfig sampler;
  int64_t max_tokens = 0;
  bool ignore_eos = false;
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<std::string> stop;
  std::string model;          // as the client named it (echoed back)
};

// The "model" field must name the served model (404 otherwise); the body must be a JSON object.
GenerationRequest parse_chat_request(const nlohmann::json& body, const ServedModel& m);
GenerationRequest parse_completion_request(const nlohmann::json& body, const ServedModel& m);

}  // namespace ts::server
