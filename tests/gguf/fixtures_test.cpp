// Every fixture model (tests/data/models/*.gguf, made by llama.cpp's gguf-py) opens, and its tensor
// table is consistent with its own metadata: the per-layer tensor count, the embedding shape, and
// every tensor's bytes inside the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "gguf/gguf.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> fixture_models() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(TS_TEST_DATA) / "models";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Fixtures, EveryModelHasASaneTensorTable) {
  const auto models = fixture_models();
  if (models.empty()) GTEST_SKIP() << "no fixture models in " << TS_TEST_DATA << "/models";
  for (const auto& path : models) {
    SCOPED_TRACE(path);
    auto g = GgufFile::open(path);
    const std::string arch = g->get_string("general.architecture");
    const int64_t layers = g->get_int(arch + ".block_count");
    const int64_t embd = g->get_int(arch + ".embedding_length");
    const int64_t vocab = g->get_int(arch + ".vocab_size");
    ASSERT_GT(layers, 0);

    const GgufTensor& emb = g->tensor("token_embd.weight");
    EXPECT_EQ(emb.dims, (std::vector<uint64_t>{static_cast<uint64_t>(embd), static_cast<uint64_t>(vocab)}));
    EXPECT_EQ(g->tensor("output_norm.weight").dims, (std::vector<uint64_t>{static_cast<uint64_t>(embd)}));

    // Every block has the same set of tensor suffixes, and nothing outside the blocks is unknown.
    std::vector<std::set<std::string>> per_layer(layers);
    for (const auto& t : g->tensors()) {
      EXPECT_GE(t.data, g->file().data() + g->data_offset());
      EXPECT_LE(t.data + t.n_bytes, g->file().data() + g->file().size());
      EXPECT_EQ(t.offset % g->alignment(), 0u);
      if (t.name.rfind("blk.", 0) == 0) {
        const size_t dot = t.name.find('.', 4);
        const int64_t layer = std::stoll(t.name.substr(4, dot - 4));
        ASSERT_LT(layer, layers) << t.name;
        per_layer[layer].insert(t.name.substr(dot + 1));
      } else {
        EXPECT_TRUE(t.name == "token_embd.weight" || t.name == "output_norm.weight" || t.name == "output.weight" ||
                    t.name == "rope_freqs.weight")
            << t.name;
      }
    }
    for (int64_t i = 1; i < layers; ++i) EXPECT_EQ(per_layer[i], per_layer[0]) << "block " << i;
    EXPECT_TRUE(per_layer[0].count("attn_q.weight"));
    EXPECT_EQ(g->tensor("blk.0.attn_norm.weight").dims, (std::vector<uint64_t>{static_cast<uint64_t>(embd)}));
    if (const int64_t experts = g->get_int(arch + ".expert_count", 0); experts > 0) {
      const GgufTensor& up = g->tensor("blk.0.ffn_up_exps.weight");
      ASSERT_EQ(up.dims.size(), 3u);
      EXPECT_EQ(up.dims[0], static_cast<uint64_t>(embd));
      EXPECT_EQ(up.dims[2], static_cast<uint64_t>(experts));
    }
  }
}

}  // namespace
}  // namespace ts
