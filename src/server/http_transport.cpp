#include "server/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ts::server {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kSpareWorkers = 8;  // answer 503 to connections past the limit

int ms_until(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

bool poll_for(int sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int r;
  do r = ::poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r > 0 && (p.revents & events);
}

void address_of(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if ((peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len) : ::getsockname(sock, reinterpret_cast<sockaddr*>(&a), &len)) != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    port = ntohs(v6->sin6_port);
  }
  ip = buf;
}

// A socket stream whose reads share one deadline (the whole request must arrive by then).
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int sock, Clock::time_point read_deadline, int write_timeout_ms)
      : sock_(sock), deadline_(read_deadline), write_ms_(write_timeout_ms) {}

  bool is_readable() const override { return off_ < avail_ || poll_for(sock_, POLLIN, ms_until(deadline_)); }
  bool is_writable() const override { return poll_for(sock_, POLLOUT, write_ms_) && !peer_closed(sock_); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == avail_) {
      if (!is_readable()) return -1;
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      off_ = 0;
      avail_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, avail_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!poll_for(sock_, POLLOUT, write_ms_)) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  int sock_;
  Clock::time_point deadline_;
  int write_ms_;
  char buf_[4096];
  size_t off_ = 0, avail_ = 0;
};

// Waits for the next request on a kept-alive connection, giving up when the server stops.
bool next_request_arrives(int sock, const httplib::Server& s, double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (s.is_running()) {
    const int left = ms_until(until);
    if (poll_for(sock, POLLIN, std::min(left, 100))) return true;
    if (left == 0) return false;
  }
  return false;
}

// Half-closes, then reads (and drops) what the client still sends for a moment, so that closing with
// unread bytes does not reset the connection before the client has read the answer.
void lingering_close(int sock) {
  ::shutdown(sock, SHUT_WR);
  const auto until = Clock::now() + 1s;
  char buf[4096];
  size_t drained = 0;
  while (drained < (1u << 20) && poll_for(sock, POLLIN, ms_until(until))) {
    const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(sock);
}

}  // namespace

ConnectionContext& this_connection() {
  thread_local ConnectionContext c;
  return c;
}

bool peer_closed(int sock) {
  pollfd p{sock, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char c;
  return ::recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

GuardedServer::GuardedServer(const TransportLimits& limits) : lim_(limits) {
  const size_t workers = static_cast<size_t>(limits.max_connections) + kSpareWorkers;
  new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  const auto usec = [](double s) { return static_cast<time_t>(s * 1e6) % 1000000; };
  set_read_timeout(static_cast<time_t>(limits.request_timeout), usec(limits.request_timeout));
  set_write_timeout(static_cast<time_t>(limits.write_timeout), usec(limits.write_timeout));
  // SO_REUSEADDR, so that a restarted server can bind while old connections linger in TIME_WAIT;
  // not httplib's SO_REUSEPORT, which would let a second server silently share the port.
  set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

void GuardedServer::widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const int64_t open = ++open_;
  ConnectionContext& c = this_connection();
  c = ConnectionContext{};
  c.sock = sock;
  c.rejected = open > lim_.max_connections;
  const auto request_time = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.rejected ? 2.0 : lim_.request_timeout));
  const int write_ms = static_cast<int>(lim_.write_timeout * 1000);
  for (int n = 0; n < lim_.max_requests_per_connection; ++n) {
    if (!next_request_arrives(sock, *this, n == 0 ? lim_.request_timeout : lim_.keep_alive)) break;
    const bool last = c.rejected || n + 1 == lim_.max_requests_per_connection;
    c.close = false;
    c.request_start = Clock::now();
    c.prompt_tokens = c.completion_tokens = 0;
    DeadlineStream strm(sock, c.request_start + request_time, write_ms);
    bool closed_by_client = false;
    if (!process_request(strm, last || c.close, closed_by_client, nullptr) || closed_by_client || c.close || last) break;
  }
  lingering_close(sock);
  c.sock = -1;
  --open_;
  return true;
}

}  // namespace ts::server
