#include "support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace ts::test {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return fmt::format("killed after the {:.0f} s timeout (a hang)", seconds);
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit {}", code);
}

Child::Child(const std::vector<std::string>& argv, const ProcessOptions& opt) : opt_(opt) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
  if (opt.stdout_path.empty() || opt.stderr_path.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ts-proc-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    tmp_dir_ = tmpl;
  }
  out_path_ = opt.stdout_path.empty() ? tmp_dir_ + "/stdout" : opt.stdout_path;
  err_path_ = opt.stderr_path.empty() ? tmp_dir_ + "/stderr" : opt.stderr_path;

  // A memory limit goes through a shell that sets it and then execs the program, so the child we
  // wait for is still the program itself (its signals are reported as they are).
  std::vector<std::string> args = argv;
  if (opt.address_space_limit) {
    args = {"/bin/sh", "-c", fmt::format("ulimit -v {} && exec \"$0\" \"$@\"", opt.address_space_limit / 1024)};
    args.insert(args.end(), argv.begin(), argv.end());
  }
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // This process's environment, with the entries opt.env names replaced (getenv takes the first).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(opt.env.begin(), opt.env.end(), [&](const std::string& o) { return o.starts_with(name); }))
      env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), opt.env.begin(), opt.env.end());
  std::vector<char*> cenv;
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, opt.stdin_path.c_str(), O_RDONLY, 0);
  if (opt.stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, opt.stdout_fd, 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (opt.stderr_to_stdout)
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  else
    posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal dispositions whatever the test runner ignores.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  start_ = now_s();
  const int rc = posix_spawn(&pid_, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot run '{}': {}", args[0], std::strerror(rc)));
}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (!tmp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_dir_, ec);
  }
}

ProcessResult Child::wait() {
  ProcessResult r;
  int status = 0;
  struct rusage ru {};
  const double deadline = start_ + opt_.timeout_s;
  for (int sleep_us = 100;;) {
    const pid_t w = ::wait4(pid_, &status, WNOHANG, &ru);
    if (w == pid_) break;
    if (w < 0 && errno != EINTR) throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    if (now_s() > deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(pid_, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 20000);
  }
  pid_ = -1;
  r.seconds = now_s() - start_;
  r.max_rss_kb = ru.ru_maxrss;
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (opt_.stdout_path.empty() && opt_.stdout_fd < 0) r.out = slurp(out_path_);
  if (opt_.stderr_path.empty() && !opt_.stderr_to_stdout) r.err = slurp(err_path_);
  return r;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opt) { return Child(argv, opt).wait(); }

}  // namespace ts::test
