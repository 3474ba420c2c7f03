// Raw byte files and the small reference model for the GGUF reader tests.
#include "gguf/gguf_test_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace ts::test {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_small_model(const std::string& path, uint64_t alignment) {
  GgufWriter w(path, alignment);
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("general.flag", true);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "bc", ""});
  w.set_i32_array("tokenizer.ggml.token_type", {1, -2, 3});
  w.add_tensor("f32", GgmlType::F32, {8, 3});
  w.add_tensor("q8", GgmlType::Q8_0, {64, 2});
  w.add_tensor("f16", GgmlType::F16, {5});
  w.add_tensor("mx", GgmlType::MXFP4, {32, 1, 2, 1});
  w.begin_data();
  // Byte k of tensor j is (k * 7 + j) & 0xff: any misplaced offset shows up as wrong bytes.
  uint64_t sizes[] = {8 * 3 * 4, 2 * 2 * 34, 5 * 2, 2 * 17};
  for (uint64_t j = 0; j < 4; ++j) {
    std::vector<uint8_t> b(sizes[j]);
    for (uint64_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>(k * 7 + j);
    w.write(b.data(), b.size());
  }
  w.finish();
}

std::string open_error(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_bytes(path, bytes);
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace ts::test
