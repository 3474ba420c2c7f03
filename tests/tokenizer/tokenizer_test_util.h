// Helpers for the tokenizer tests: fixture readers (llama.cpp's .inp/.out vocabulary tests, CSV).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ts::test {

std::string read_file(const std::string& path);
std::string tokenizer_data(const std::string& name);  // path under tests/data/tokenizers

struct VocabCase {
  std::string input;
  std::vector<int32_t> expected;
};
// llama.cpp tests/test-tokenizer-0.cpp format: inputs separated by "\n__ggml_vocab_test__\n", one
// line of space-separated ids per input.
std::vector<VocabCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path);

// RFC 4180 CSV (quoted fields may hold commas, quotes and newlines); first row is the header.
std::vector<std::vector<std::string>> read_csv(const std::string& path);
std::vector<int32_t> parse_id_list(const std::string& json_array);

}  // namespace ts::test
