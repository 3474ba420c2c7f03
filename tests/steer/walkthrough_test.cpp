// docs/STEERING.md's walkthrough runs as written: scripts/steering_walkthrough.sh captures residuals
// on the default model, extracts a direction with scripts/extract_direction.py, and each steered
// generation differs from the unsteered one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cli/cli_harness.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

TEST(SteeringWalkthrough, RunsAsWrittenAndEachDirectionChangesTheText) {
  test::ScratchDir dir;
  test::ProcessOptions opt;
  opt.env = {std::string("TURBOSPARK=") + TS_BINARY, std::string("PYTHON=") + TS_PYTHON};
  opt.stderr_to_stdout = true;
  const test::ProcessResult r =
      test::run_process({"/bin/bash", std::string(TS_SOURCE_DIR) + "/scripts/steering_walkthrough.sh", dir.file("demo")}, opt);
  const std::string& out = r.out;
  ASSERT_EQ(r.code, 0) << r.describe() << "\n" << out;
  EXPECT_THAT(out, HasSubstr("29 directions of 576 values (mean, 6 positive / 6 negative snapshots)"));
  // The generations, keyed by their "== ..." headers (the unsteered one of each question first).
  std::vector<std::pair<std::string, std::string>> gens;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) gens.emplace_back(line, "");
    else if (!gens.empty()) gens.back().second += line;
  }
  ASSERT_EQ(gens.size(), 5u) << out;
  EXPECT_NE(gens[1].second, gens[0].second);
  EXPECT_NE(gens[2].second, gens[0].second);
  EXPECT_NE(gens[4].second, gens[3].second);
  for (const auto& [head, text] : gens) EXPECT_GT(text.size(), 40u) << head;
}

}  // namespace
}  // namespace ts
