// The process harness itself (issue 10, item 8): a child killed by a signal is reported as a
// signal, never as an exit code (std::system's shell turned SIGSEGV into "exit 139", so every "not
// killed by a signal" check in the CLI tests could never fail), and a hang is killed and reported.
#include <gtest/gtest.h>

#include <csignal>

#include "support/process.h"

namespace ts {
namespace {

TEST(Harness, SignalIsReportedAsASignal) {
  const test::ProcessResult r = test::run_process({"/bin/sh", "-c", "kill -SEGV $$"});
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.describe(), "killed by signal 11 (Segmentation fault)");
}

TEST(Harness, ExitCodeAndOutputAreCaptured) {
  const test::ProcessResult r = test::run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(Harness, HangIsKilledAndReported) {
  test::ProcessOptions opt;
  opt.timeout_s = 0.5;
  const test::ProcessResult r = test::run_process({"/bin/sleep", "30"}, opt);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.seconds, 10);
}

TEST(Harness, AddressSpaceLimitApplies) {
  test::ProcessOptions opt;
  opt.address_space_limit = uint64_t{256} << 20;
  const test::ProcessResult r = test::run_process({"/bin/sh", "-c", "ulimit -v"}, opt);
  EXPECT_EQ(r.out, "262144\n");
}

}  // namespace
}  // namespace ts
