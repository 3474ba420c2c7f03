// OpenAI tiktoken encodings: every row of the reference CSVs (produced with the tiktoken library)
// must encode identically; the outputMaxTokens10 column is the longest prefix of at most 10 tokens
// that still decodes to whole characters. Also load time and throughput bounds.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <iostream>

#include "support/scratch_dir.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"
#include "tokenizer_test_util.h"

namespace ts {
namespace {

// Speed bounds hold for optimised builds only (sanitizers and -O0 are many times slower).
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
constexpr bool kCheckSpeed = true;
#else
constexpr bool kCheckSpeed = false;
#endif

class TiktokenFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(TiktokenFixture, MatchesReferenceEncodings) {
  const std::string enc = GetParam();
  const auto t0 = std::chrono::steady_clock::now();
  const auto tok = Tokenizer::from_tiktoken(test::tokenizer_data(enc + ".tiktoken"), enc, {});
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ " << enc << " ] loaded in " << load_s << " s\n";
  if (kCheckSpeed) {
    EXPECT_LT(load_s, 1.0);
  }

  const auto rows = test::read_csv(test::tokenizer_data(enc + "_encodings.csv"));
  ASSERT_GT(rows.size(), 1u);
  ASSERT_EQ(rows[0], (std::vector<std::string>{"input", "output", "outputMaxTokens10"}));
  size_t passed = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), 3u) << "row " << r;
    const std::string& input = rows[r][0];
    const auto ids = tok->encode(input, false, false);
    const auto expected = test::parse_id_list(rows[r][1]);
    EXPECT_EQ(ids, expected) << "input: '" << input << "'";
    EXPECT_EQ(tok->decode(ids), input);
    std::vector<int32_t> prefix(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), 10));
    while (!prefix.empty() && !utf8_is_valid(tok->decode(prefix))) prefix.pop_back();
    EXPECT_EQ(prefix, test::parse_id_list(rows[r][2])) << "input: '" << input << "'";
    passed += ids == expected;
  }
  std::cout << "[ " << enc << " ] " << passed << "/" << rows.size() - 1 << " rows pass\n";
}

INSTANTIATE_TEST_SUITE_P(OpenAI, TiktokenFixture, ::testing::Values("o200k_base", "cl100k_base"));

TEST(TiktokenThroughput, PlainTextEncodesAtSeveralMegabytesPerSecond) {
  const auto tok = Tokenizer::from_tiktoken(test::tokenizer_data("o200k_base.tiktoken"), "o200k_base", {});
  // Varied text: every CSV input repeated to about 4 MB.
  const auto rows = test::read_csv(test::tokenizer_data("o200k_base_encodings.csv"));
  std::string text;
  while (text.size() < (4u << 20))
    for (size_t r = 1; r < rows.size(); ++r) text += rows[r][0] + "\n";
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(text, false, false);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double mbps = text.size() / s / 1e6;
  std::cout << "[ o200k_base ] encoded " << text.size() << " bytes into " << ids.size() << " tokens at " << mbps << " MB/s\n";
  EXPECT_EQ(tok->decode(ids), text);
  if (kCheckSpeed) {
    EXPECT_GT(mbps, 2.0);
  }
}

TEST(Tiktoken, RejectsUnknownEncodingAndBadFiles) {
  EXPECT_THROW(Tokenizer::from_tiktoken(test::tokenizer_data("o200k_base.tiktoken"), "p50k_base", {}), Error);
  EXPECT_THROW(Tokenizer::from_tiktoken(test::tokenizer_data("no-such.tiktoken"), "o200k_base", {}), Error);
  EXPECT_THROW(Tokenizer::from_tiktoken(test::tokenizer_data("o200k_base_encodings.csv"), "o200k_base", {}), Error);
  // A special token may not take a ranked token's id.
  EXPECT_THROW(Tokenizer::from_tiktoken(test::tokenizer_data("cl100k_base.tiktoken"), "cl100k_base", {{"<|x|>", 5}}), Error);
}

// Not a regular file: refused at once. The loader used to open a FIFO for reading and block until a
// writer came; if it still does, the test opens the FIFO for writing itself to let it go, and fails.
TEST(Tiktoken, FifoIsRefusedWithoutBlocking) {
  test::ScratchDir dir;
  const std::string fifo = dir.file("ranks.tiktoken");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto load = std::async(std::launch::async, [&] {
    try {
      Tokenizer::from_tiktoken(fifo, "o200k_base", {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  });
  if (load.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL() << "the loader blocked on a FIFO";
  }
  EXPECT_NE(load.get().find("is a FIFO"), std::string::npos);
}

// A rank far beyond what the file could list would size the vocabulary (one entry per id) from a
// number instead of from the file: refused.
TEST(Tiktoken, RankBeyondTheFileIsRefused) {
  test::ScratchDir dir;
  const std::string path = dir.file("ranks.tiktoken");
  std::ofstream(path) << "QQ== 0\nQg== 16000000\n";
  try {
    Tokenizer::from_tiktoken(path, "o200k_base", {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 16000000 is out of range"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
