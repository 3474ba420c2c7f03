// The connection layer under cpp-httplib, for the limits its 0.11 release lacks. httplib parses HTTP
// and routes; this class decides what a connection may cost:
//   - open connections: each connection has a worker thread; past max_connections a few spare
//     workers answer every request with 503 (the pre-routing handler checks rejected()) and close;
//   - a request's head and body must arrive within request_timeout in total, so a client sending a
//     byte a second cannot hold a worker (httplib's own timeout restarts with every byte);
//   - writes time out (a client that stops reading), keep-alive connections idle out;
//   - closing drains what the client still sends for a moment first, so an early answer (401, 413)
//     is not destroyed by a TCP reset.
// It does so by running each connection's keep-alive loop itself (httplib's process_and_close_socket
// is a virtual for exactly this: its SSL server overrides it) with its own Stream over the socket.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ts::server {

struct TransportLimits {
  int max_connections = 128;
  double request_timeout = 30;  // seconds for a request's head and body
  double write_timeout = 30;    // seconds one write may wait for the client
  double keep_alive = 5;        // idle seconds between requests on one connection
  int max_requests_per_connection = 1000;
};

// What handlers may learn about the connection they run on. httplib runs a request's handler, its
// content provider and the logger on the connection's worker thread, so this is thread-local.
struct ConnectionContext {
  int sock = -1;
  bool rejected = false;  // over the connection limit: every request is answered 503
  bool close = false;     // set by a handler: close the connection after this response
  std::chrono::steady_clock::time_point request_start;
  int64_t prompt_tokens = 0, completion_tokens = 0;  // for the request's log line
};
ConnectionContext& this_connection();

// The client closed its side of the connection (it went away); reads nothing.
bool peer_closed(int sock);

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const TransportLimits& limits);
  int64_t open_connections() const { return open_.load(); }
  // After binding: httplib 0.11 listens with a backlog of 5, so a burst of clients connecting at once
  // overflows it (dropped SYNs cost a second each, and some connections are reset). Linux takes a
  // second listen() on the socket as a new backlog.
  void widen_backlog(int backlog);

 private:
  bool process_and_close_socket(socket_t sock) override;

  TransportLimits lim_;
  std::atomic<int64_t> open_{0};
};

}  // namespace ts::server
