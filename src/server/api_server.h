// The OpenAI-compatible HTTP API over a Scheduler:
//   POST /v1/chat/completions, POST /v1/completions  (streamed as server-sent events, or whole)
//   GET  /v1/models[/ID], /health, /metrics, and the web chat page at /
// (the same paths without /v1 too, as llama-server accepts them). HTTP threads parse and validate,
// submit a Job, and turn its tokens into OpenAI objects; a client that disconnects cancels its job.
// Every error is OpenAI's JSON error shape; each request is logged as one line on stderr.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/scheduler.h"

namespace ts::server {

struct ApiOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (bind() returns it)
  std::string api_key;     // empty: no key required
  size_t max_body = 8u << 20;
  TransportLimits limits;
  bool log_requests = true;
};

class ApiServer {
 public:
  ApiServer(ServedModel model, Scheduler& sched, const ApiOptions& opt);
  ~ApiServer();
  // Binds the listening socket; an address that cannot be bound is a ts::Error. Returns the port.
  int bind();
  void run();   // serves until stop()
  void stop();  // from any thread (e.g. a signal watcher)
  Metrics& metrics() { return metrics_; }

 private:
  struct Stream;
  void routes();
  void authorize(const httplib::Request& req) const;
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  void log(const httplib::Request& req, const httplib::Response& res);

  ServedModel model_;
  Scheduler& sched_;
  ApiOptions opt_;
  Metrics metrics_;
  GuardedServer http_;
  int64_t started_;
};

}  // namespace ts::server
