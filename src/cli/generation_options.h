// What `run` and `chat` share: sampling options, loading a model with its tokenizer, and choosing
// the chat format (from tokenizer.chat_template, or --chat-template when it is not recognised).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "chat/chat_template.h"
#include "cli/options.h"
#include "cli/steering_options.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace ts::cli {

struct GenerationOptions {
  ModelOptions model;
  SamplerConfig sampler;
  std::optional<uint64_t> seed;  // unset: a random seed, printed so the run can be repeated
  int64_t n_predict = 256;
  std::string chat_template;     // format name override
  std::string system;            // system prompt for chat
  std::string reasoning_effort;  // Harmony: low / medium / high
  bool show_reasoning = false;   // Harmony: print the analysis channel to stderr
  SteeringOptions steer;
};

void add_generation_options(CLI::App* sub, GenerationOptions& o);

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Steering> steering;  // null: no --steering
  ForwardOptions forward_options(const GenerationOptions& o) const;
};
// Loads the model and its tokenizer and checks that a context of o.model.ctx fits in memory.
// `sequences`: how many sequences run at once (the server's slots), each with a full context, one
// decode row and one row of logits per step: the load refuses up front what cannot fit.
LoadedModel load_for_generation(const GenerationOptions& o, int64_t sequences = 1);

// The seeded sampler config (draws and reports a seed when none was given).
SamplerConfig sampler_config(const GenerationOptions& o);
// The sampler over the tokenizer's ids: logits of ids the tokenizer lacks are never drawn.
Sampler make_sampler(const LoadedModel& m, const GenerationOptions& o);

struct ChatSetup {
  chat::Format format;
  chat::Context context;
};
ChatSetup chat_setup(const LoadedModel& m, const GenerationOptions& o);

}  // namespace ts::cli
