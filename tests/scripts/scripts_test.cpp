// The scripts a new user runs (issue 10, item 12): every `cmake -S` configure names every option of
// CMakeLists.txt and the build type (scripts/demo.sh and scripts/test.sh share build/, and an option
// cached by one, say TURBOSPARK_TESTS=OFF, used to decide silently what the other built: the whole
// Release suite was skipped), and every ctest run fails when it finds no tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ts {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Shell lines with backslash continuations joined.
std::vector<std::string> logical_lines(const std::string& text) {
  std::vector<std::string> out;
  std::string cur, line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\\') {
      cur += line.substr(0, line.size() - 1);
      continue;
    }
    out.push_back(cur + line);
    cur.clear();
  }
  return out;
}

std::vector<fs::path> scripts() {
  std::vector<fs::path> v{fs::path(TS_SOURCE_DIR) / ".ci/run"};
  for (const auto& e : fs::directory_iterator(fs::path(TS_SOURCE_DIR) / "scripts"))
    if (e.path().extension() == ".sh") v.push_back(e.path());
  return v;
}

TEST(Scripts, EveryConfigureNamesEveryOption) {
  std::vector<std::string> options{"CMAKE_BUILD_TYPE"};
  const std::string cmake = read(fs::path(TS_SOURCE_DIR) / "CMakeLists.txt");
  // option(NAME ...) and set(NAME VALUE CACHE ...): the cache options a configure must name.
  const std::regex option_re(R"(option\((\w+)|set\((\w+) \S+ CACHE)");
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), option_re); it != std::sregex_iterator(); ++it)
    options.push_back((*it)[1].matched ? (*it)[1] : (*it)[2]);
  ASSERT_GE(options.size(), 5u) << "CMakeLists.txt options not found";
  int configures = 0;
  for (const fs::path& s : scripts())
    for (const std::string& line : logical_lines(read(s))) {
      if (line.find("cmake -S") == std::string::npos) continue;
      ++configures;
      for (const std::string& o : options)
        EXPECT_NE(line.find("-D" + o + "="), std::string::npos) << s.filename() << " configures without -D" << o << ": " << line;
    }
  EXPECT_GE(configures, 3) << "demo, test and fuzz configures expected";
}

TEST(Scripts, EveryCtestRunFailsWithoutTests) {
  int runs = 0;
  const std::regex ctest_re(R"((^|[\s(;&|])ctest\s)");
  for (const fs::path& s : scripts())
    for (const std::string& line : logical_lines(read(s))) {
      if (line.find_first_not_of(" \t") != std::string::npos && line[line.find_first_not_of(" \t")] == '#') continue;
      if (!std::regex_search(line, ctest_re)) continue;
      ++runs;
      EXPECT_NE(line.find("--no-tests=error"), std::string::npos) << s.filename() << ": " << line;
    }
  EXPECT_GE(runs, 2) << "the Release and ASan ctest runs expected";
}

}  // namespace
}  // namespace ts
