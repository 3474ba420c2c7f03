// Running a program from a test: posix_spawn and waitpid, never std::system or popen, whose shell
// reports a child killed by a signal as an ordinary exit code 128+N (so "it did not crash" could
// never fail). The result says exactly how the child ended: exit code, signal, or killed after a
// timeout (a hang), with its output and peak memory.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ts::test {

struct ProcessOptions {
  std::string stdin_path = "/dev/null";
  std::string stdout_path, stderr_path;  // empty: captured to temporary files and returned as text
  int stdout_fd = -1;                    // >= 0: the child's stdout is a copy of this descriptor
  bool stderr_to_stdout = false;         // 2>&1: both streams in `out`, in the order written
  std::vector<std::string> env;          // extra NAME=VALUE entries, on top of this process's
  double timeout_s = 300;                // then SIGKILL; the result has timed_out set
  uint64_t address_space_limit = 0;      // > 0: RLIMIT_AS of the child (`ulimit -v`), in bytes
};

struct ProcessResult {
  bool exited = false;     // a normal exit; `code` holds its status
  int code = -1;
  int signal = 0;          // > 0: killed by this signal (a crash, or our SIGKILL after a timeout)
  bool timed_out = false;
  // The child's peak resident set. Linux counts the spawning process's own peak into it (the
  // address space the child starts from is the parent's until exec), so it is only meaningful when
  // the test process itself stays small.
  long max_rss_kb = 0;
  double seconds = 0;
  std::string out, err;    // captured output (when not sent to a path)
  std::string describe() const;  // "exit 1", "killed by signal 11 (Segmentation fault)", ...
};

// A child process started in the background (for tests that signal it while it runs).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const ProcessOptions& opt = {});
  ~Child();  // kills and reaps a child that is still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  ProcessResult wait();  // waits up to the timeout, then kills

 private:
  ProcessOptions opt_;
  pid_t pid_ = -1;
  std::string out_path_, err_path_, tmp_dir_;
  double start_ = 0;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opt = {});

}  // namespace ts::test
