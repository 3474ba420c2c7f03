#include "server/api_server.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <ctime>

#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/web_page.h"
#include "util/error.h"

namespace ts::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kMaxJsonDepth = 64;
constexpr auto kPoll = 20ms;  // how often a waiting HTTP thread looks for a departed client

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump_json(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status, e.to_json());
  if (e.status == 503) res.set_header("Retry-After", "1");
}

// Nesting depth of a JSON text, counted outside strings: bodies nested deeper than any real request
// are refused before parsing, so nothing downstream recurses over them.
bool depth_within(const std::string& s, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

json parse_body(const httplib::Request& req) {
  if (!depth_within(req.body, kMaxJsonDepth)) throw ApiError(400, fmt::format("The JSON body is nested deeper than {} levels", kMaxJsonDepth));
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, fmt::format("The request body is not valid JSON: {}", e.what()));
  }
}

std::array<unsigned char, SHA256_DIGEST_LENGTH> digest(const std::string& s) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d;
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

std::string sse(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

const char* endpoint_name(const std::string& path) {
  for (const char* p : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/", "/tokenize", "/detokenize"})
    if (path == p) return p;
  if (path == "/chat/completions") return "/v1/chat/completions";
  if (path == "/completions") return "/v1/completions";
  if (path.starts_with("/v1/models/") || path == "/models" || path.starts_with("/models/")) return "/v1/models";
  return "other";
}

}  // namespace

// One generation request being answered: the job, and the reply turned into OpenAI objects. Shared
// between the handler and, when streaming, httplib's content provider.
struct ApiServer::Stream {
  std::shared_ptr<Job> job;
  Reply reply;
  ResponseMeta meta;
  const Tokenizer& tok;
  bool include_usage;
  bool sent_first = false;
  ReplyDelta all;  // the whole reply's tokens (non-streamed log-probabilities)

  Stream(std::shared_ptr<Job> j, const GenerationRequest& g, const Tokenizer& t)
      : job(std::move(j)), reply(t, g.harmony, g.stop), meta(new_response_meta(g.chat, g.model, g.top_logprobs >= 0)), tok(t),
        include_usage(g.include_usage) {}

  // Moves new tokens into the reply; returns the job's result once it has one.
  std::optional<JobResult> collect(std::vector<ReplyDelta>* deltas) {
    std::vector<SampledToken> toks;
    std::optional<JobResult> r = job->wait(toks, kPoll);
    for (const auto& t : toks) {
      ReplyDelta d = reply.push(t);
      if (reply.stop_found()) job->cancel();  // a Harmony stop string: this is the end of the answer
      if (deltas) deltas->push_back(std::move(d));
      else all.tokens.push_back(t);
    }
    return r;
  }

  // One turn of httplib's chunked content provider: writes what is new; false ends the response.
  bool pump(httplib::DataSink& sink) {
    ConnectionContext& c = this_connection();
    if (!sent_first && meta.chat) {
      // Chat streams open with the assistant's role at once, as OpenAI's do.
      sent_first = true;
      const std::string first = sse(chunk_json(meta, tok, reply, ReplyDelta{}, true, std::nullopt));
      return sink.write(first.data(), first.size());
    }
    std::vector<ReplyDelta> deltas;
    const std::optional<JobResult> r = collect(&deltas);
    std::string out;
    for (const auto& d : deltas)
      if (!d.content.empty() || !d.reasoning.empty() || !d.tool_calls.empty() || (meta.logprobs && !d.tokens.empty()))
        out += sse(chunk_json(meta, tok, reply, d, false, std::nullopt));
    if (r) {
      c.prompt_tokens = r->prompt_tokens;
      c.completion_tokens = r->completion_tokens;
      if (!r->error.empty()) {
        out += sse(ApiError(500, "generation failed: " + r->error).to_json());
      } else {
        const ReplyDelta last = reply.finish(*r);
        if (!last.empty()) out += sse(chunk_json(meta, tok, reply, last, false, std::nullopt));
        out += sse(chunk_json(meta, tok, reply, ReplyDelta{}, false, reply.finish_reason(*r)));
        if (include_usage) out += sse(usage_chunk_json(meta, *r));
      }
      out += "data: [DONE]\n\n";
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) return false;
    if (r) {
      sink.done();
      return true;
    }
    return sink.is_writable();  // false when the client went away: the releaser cancels the job
  }
};

ApiServer::ApiServer(ServedModel model, Scheduler& sched, const ApiOptions& opt)
    : model_(std::move(model)), sched_(sched), opt_(opt), http_(opt.limits), started_(static_cast<int64_t>(std::time(nullptr))) {
  routes();
}

ApiServer::~ApiServer() { stop(); }

int ApiServer::bind() {
  const int port = opt_.port == 0 ? http_.bind_to_any_port(opt_.host) : (http_.bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0) fail("cannot listen on {}:{} (address in use, or not an address of this machine)", opt_.host, opt_.port);
  http_.widen_backlog(opt_.limits.max_connections + 64);
  return port;
}

void ApiServer::run() { http_.listen_after_bind(); }

void ApiServer::stop() { http_.stop(); }

void ApiServer::authorize(const httplib::Request& req) const {
  if (opt_.api_key.empty()) return;
  const std::string auth = req.get_header_value("Authorization");
  const std::string given = auth.starts_with("Bearer ") ? auth.substr(7) : req.get_header_value("X-Api-Key");
  // Digests of equal length compared in constant time: the comparison leaks neither the key nor its length.
  const auto a = digest(given), b = digest(opt_.api_key);
  if (given.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) != 0)
    throw ApiError(401, "Incorrect or missing API key (send it as 'Authorization: Bearer KEY')", "", "invalid_api_key");
}

void ApiServer::generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  authorize(req);
  const json body = parse_body(req);
  const GenerationRequest g = chat ? parse_chat_request(body, model_) : parse_completion_request(body, model_);
  auto job = std::make_shared<Job>();
  job->prompt = g.prompt;
  job->sampler = g.sampler;
  job->params.max_tokens = g.max_tokens;
  job->params.top_logprobs = g.top_logprobs;
  job->params.ignore_eos = g.ignore_eos;
  job->params.logit_bias = g.logit_bias;
  if (!g.harmony) job->params.stop = g.stop;  // a Harmony reply's stop strings apply to its content (Reply)
  if (!sched_.submit(job)) throw ApiError(503, "The server is busy: its request queue is full; retry later", "", "server_busy");
  auto s = std::make_shared<Stream>(job, g, *model_.tok);
  if (g.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [s](size_t, httplib::DataSink& sink) { return s->pump(sink); },
        [s](bool) { s->job->cancel(); });  // a no-op when the job had finished
    return;
  }
  ConnectionContext& c = this_connection();
  std::optional<JobResult> r;
  while (!(r = s->collect(nullptr)))
    if (peer_closed(c.sock) || !http_.is_running()) s->job->cancel();
  c.prompt_tokens = r->prompt_tokens;
  c.completion_tokens = r->completion_tokens;
  if (!r->error.empty()) throw ApiError(500, "generation failed: " + r->error);
  s->reply.finish(*r);
  send_json(res, 200, response_json(s->meta, *model_.tok, s->reply, s->all, s->reply.finish_reason(*r), *r));
}

void ApiServer::routes() {
  http_.set_payload_max_length(opt_.max_body);
  http_.set_keep_alive_timeout(static_cast<time_t>(opt_.limits.keep_alive));
  http_.set_tcp_nodelay(true);  // streamed tokens go out as they come

  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ConnectionContext& c = this_connection();
    if (c.rejected) {
      send_error(res, ApiError(503, "Too many open connections; retry later", "", "server_busy"));
      c.close = true;
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib does not bound chunked request bodies, so they are refused.
    if (req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos) {
      send_error(res, ApiError(411, "Send the request body with a Content-Length (chunked bodies are not accepted)"));
      c.close = true;
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404: send_error(res, ApiError(404, fmt::format("Unknown endpoint: {} {}", req.method, req.path), "", "not_found")); break;
      case 413:
        send_error(res, ApiError(413, fmt::format("The request body is too large (the limit is {} bytes, 8192 for form-encoded bodies: send JSON as application/json)", opt_.max_body), "", "request_too_large"));
        break;
      default: send_error(res, ApiError(res.status, fmt::format("HTTP error {}", res.status)));
    }
  });
  http_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, fmt::format("internal error: {}", e.what())));
    }
  });
  http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) { log(req, res); });

  const auto chat = [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); };
  const auto completion = [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); };
  for (const char* prefix : {"/v1", ""}) {
    http_.Post(std::string(prefix) + "/chat/completions", chat);
    http_.Post(std::string(prefix) + "/completions", completion);
    http_.Get(std::string(prefix) + "/models", [this](const httplib::Request& req, httplib::Response& res) {
      authorize(req);
      const json m = {{"id", model_.id}, {"object", "model"}, {"created", started_}, {"owned_by", "turbospark"},
                      {"meta", {{"n_ctx", model_.n_ctx}, {"n_vocab", model_.tok->n_vocab()}}}};
      send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
    });
    http_.Get(std::string(prefix) + "/models/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
      authorize(req);
      if (req.matches[1] != model_.id)
        throw ApiError(404, fmt::format("The model '{}' does not exist", std::string(req.matches[1])), "model", "model_not_found");
      send_json(res, 200, {{"id", model_.id}, {"object", "model"}, {"created", started_}, {"owned_by", "turbospark"}});
    });
  }
  // llama-server's tokenizer endpoints: clients that count or build prompts in token ids use them.
  http_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    authorize(req);
    const json body = parse_body(req);
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string())
      throw ApiError(400, "'content' must be a string", "content");
    const bool special = body.value("add_special", false);
    send_json(res, 200, {{"tokens", model_.tok->encode(body["content"].get<std::string>(), special, false)}});
  });
  http_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    authorize(req);
    const json body = parse_body(req);
    const json* ids = body.is_object() && body.contains("tokens") ? &body["tokens"] : nullptr;
    if (!ids || !ids->is_array()) throw ApiError(400, "'tokens' must be an array of token ids", "tokens");
    std::vector<int32_t> v;
    for (const json& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model_.tok->n_vocab())
        throw ApiError(400, fmt::format("'tokens' holds {}, not a token id in [0, {})", id.dump(), model_.tok->n_vocab()), "tokens");
      v.push_back(id.get<int32_t>());
    }
    send_json(res, 200, {{"content", model_.tok->decode(v)}});
  });
  http_.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  http_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    authorize(req);
    res.set_content(metrics_.render(sched_.stats(), model_.n_ctx, http_.open_connections()), "text/plain; version=0.0.4");
  });
  http_.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(web_page()), "text/html; charset=utf-8");
  });
}

void ApiServer::log(const httplib::Request& req, const httplib::Response& res) {
  const ConnectionContext& c = this_connection();
  metrics_.count_request(endpoint_name(req.path), res.status);
  if (!opt_.log_requests) return;
  const double secs = std::chrono::duration<double>(Clock::now() - c.request_start).count();
  std::fprintf(stderr, "%s %s %s %d prompt=%lld completion=%lld %.3fs\n", req.remote_addr.c_str(), req.method.c_str(),
               req.path.c_str(), res.status, static_cast<long long>(c.prompt_tokens), static_cast<long long>(c.completion_tokens), secs);
}

}  // namespace ts::server
