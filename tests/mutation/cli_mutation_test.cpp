// Mutation test through the CLI (issue 10, item 15): every model fixture family, mutated in the ways
// a hostile or damaged file differs from a good one (truncations, byte flips, inflated counts and
// string lengths, extreme and NaN metadata, dimensions, types and offsets, NaN weights, removed and
// duplicated keys), is given to `turbospark logits` under an address-space limit (`ulimit -v`, except
// under ASan). Every outcome must be a success with finite logits or exit 1 with a clear message;
// never a signal, a hang, another exit code, a bare "out of memory" or a memory blow-up. The outcome
// counts are printed per fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "cli/cli_harness.h"
#include "support/gguf_edit.h"

namespace ts {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan needs terabytes of address space, and runs 5x slower
#else
constexpr bool kSanitized = false;
#endif

using Bytes = std::vector<uint8_t>;

// Where the fields of a GGUF file are, found by walking its layout (the reader under test is not
// used for this, so a mutation can target any field).
struct Layout {
  enum class Kind { Count, StringLength, Int, Float, ValueType, Dim, TensorType, TensorOffset };
  struct Field {
    Kind kind;
    size_t at, size;
    bool is_signed = false;
  };
  std::vector<Field> fields;
  struct Kv {
    size_t begin, end;
  };
  std::vector<Kv> kvs;
  size_t kv_end = 0, infos_end = 0, data_offset = 0;
  struct Data {
    size_t at, bytes;
    uint32_t type;
  };
  std::vector<Data> tensors;
};

class Walker {
 public:
  explicit Walker(const Bytes& b) : b_(b) {}
  Layout walk() {
    Layout l;
    pos_ = 8;
    const size_t n_tensors_at = pos_;
    const uint64_t n_tensors = u64();
    l.fields.push_back({Layout::Kind::Count, n_tensors_at, 8});
    l.fields.push_back({Layout::Kind::Count, pos_, 8});
    const uint64_t n_kv = u64();
    uint64_t alignment = 32;
    for (uint64_t k = 0; k < n_kv; ++k) {
      const size_t begin = pos_;
      const std::string key = str(l);
      l.fields.push_back({Layout::Kind::ValueType, pos_, 4});
      const uint32_t type = u32();
      const size_t value_at = pos_;
      value(l, type);
      if (key == "general.alignment") std::memcpy(&alignment, b_.data() + value_at, 4), alignment &= 0xffffffff;
      l.kvs.push_back({begin, pos_});
    }
    l.kv_end = pos_;
    std::vector<std::pair<uint64_t, uint32_t>> offsets;  // per tensor: offset, type
    std::vector<uint64_t> elems;
    for (uint64_t t = 0; t < n_tensors; ++t) {
      str(l);
      const uint32_t nd = u32();
      uint64_t n = 1;
      for (uint32_t d = 0; d < nd; ++d) {
        l.fields.push_back({Layout::Kind::Dim, pos_, 8});
        n *= u64();
      }
      l.fields.push_back({Layout::Kind::TensorType, pos_, 4});
      const uint32_t type = u32();
      l.fields.push_back({Layout::Kind::TensorOffset, pos_, 8});
      offsets.push_back({u64(), type});
      elems.push_back(n);
    }
    l.infos_end = pos_;
    l.data_offset = (pos_ + alignment - 1) / alignment * alignment;
    for (size_t t = 0; t < offsets.size(); ++t)
      l.tensors.push_back({l.data_offset + offsets[t].first, static_cast<size_t>(elems[t]), offsets[t].second});
    return l;
  }

 private:
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, b_.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    std::memcpy(&v, b_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string str(Layout& l) {
    l.fields.push_back({Layout::Kind::StringLength, pos_, 8});
    const uint64_t n = u64();
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void value(Layout& l, uint32_t type) {
    static const size_t kSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      str(l);
    } else if (type == 9) {
      const uint32_t elem = u32();
      l.fields.push_back({Layout::Kind::Count, pos_, 8});
      const uint64_t n = u64();
      for (uint64_t i = 0; i < n; ++i) value(l, elem);
    } else if (type == 6 || type == 12) {
      l.fields.push_back({Layout::Kind::Float, pos_, kSize[type]});
      pos_ += kSize[type];
    } else {
      l.fields.push_back({Layout::Kind::Int, pos_, kSize[type], type == 1 || type == 3 || type == 5 || type == 11});
      pos_ += kSize[type];
    }
  }
  const Bytes& b_;
  size_t pos_ = 0;
};

// A mutant is made when it runs, not kept: the test process must stay small, because Linux counts
// the spawning process's peak RSS into the child's ru_maxrss (see support/process.h).
struct Mutant {
  std::string what;
  std::function<Bytes()> make;
};

void put(Bytes& b, size_t at, uint64_t v, size_t size) { std::memcpy(b.data() + at, &v, size); }

std::vector<Mutant> mutants(const Bytes& good) {
  const Layout l = Walker(good).walk();
  std::vector<Mutant> out;
  auto add = [&](std::string what, std::function<Bytes()> make) { out.push_back({std::move(what), std::move(make)}); };
  auto with = [&good](size_t at, uint64_t v, size_t size) {
    return [&good, at, v, size] {
      Bytes b = good;
      put(b, at, v, size);
      return b;
    };
  };
  // Truncations, from inside the header to one byte short.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{12}, l.kv_end / 2, l.kv_end, (l.kv_end + l.infos_end) / 2, l.data_offset,
                     (l.data_offset + good.size()) / 2, good.size() - 1})
    add(fmt::format("truncated to {} bytes", cut), [&good, cut] { return Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)); });
  int n_dims = 0, n_types = 0, n_offsets = 0;
  for (const auto& f : l.fields) {
    using K = Layout::Kind;
    switch (f.kind) {
      case K::Count:
      case K::StringLength:
        for (uint64_t v : {uint64_t{0}, uint64_t{1} << 31, uint64_t{1} << 40, ~uint64_t{0}})
          add(fmt::format("count/length at {} = {}", f.at, v), with(f.at, v, 8));
        break;
      case K::Int:
        for (uint64_t v : {uint64_t{0}, uint64_t{1} << 24, ~uint64_t{0}, uint64_t{0x7fffffff}})
          add(fmt::format("integer at {} = {:#x}", f.at, v), with(f.at, v, f.size));
        break;
      case K::Float:
        for (double v : {std::nan(""), double{INFINITY}, -double{INFINITY}, 0.0, -1.0, 1e30})
          add(fmt::format("float at {} = {}", f.at, v), [&good, f, v] {
            Bytes b = good;
            const float x = static_cast<float>(v);
            std::memcpy(b.data() + f.at, f.size == 4 ? static_cast<const void*>(&x) : static_cast<const void*>(&v), f.size);
            return b;
          });
        break;
      case K::ValueType:
        add(fmt::format("value type at {} = 13", f.at), with(f.at, 13, 4));
        add(fmt::format("value type at {} = array", f.at), with(f.at, 9, 4));
        break;
      case K::Dim:
        if (n_dims++ < 12)
          for (uint64_t v : {uint64_t{0}, uint64_t{1} << 32, uint64_t{1} << 40}) add(fmt::format("dim at {} = {}", f.at, v), with(f.at, v, 8));
        break;
      case K::TensorType:
        if (n_types++ < 10)
          for (uint64_t v : {uint64_t{2}, uint64_t{30}, uint64_t{1000}}) add(fmt::format("tensor type at {} = {}", f.at, v), with(f.at, v, 4));
        break;
      case K::TensorOffset:
        if (n_offsets++ < 10)
          for (uint64_t v : {uint64_t{1}, uint64_t{1} << 40, ~uint64_t{0} - 31}) add(fmt::format("tensor offset at {} = {}", f.at, v), with(f.at, v, 8));
        break;
    }
  }
  // NaN and infinite weights: the first element of F32 tensors, the first block scale of Q8_0 ones.
  int n_nan = 0;
  for (const auto& t : l.tensors) {
    if (n_nan >= 8 || (t.type != 0 && t.type != 8)) continue;
    ++n_nan;
    for (const bool nan : {true, false})
      add(fmt::format("{} weight at {}", nan ? "NaN" : "inf", t.at), [&good, t, nan] {
        Bytes b = good;
        if (t.type == 0) {
          const float x = nan ? std::nanf("") : INFINITY;
          std::memcpy(b.data() + t.at, &x, 4);
        } else {
          put(b, t.at, nan ? 0x7e00 : 0x7c00, 2);  // f16 NaN / +inf block scale
        }
        return b;
      });
  }
  // Removed keys, and a duplicated key: the file is reassembled so that the tensor data still
  // starts at the aligned end of the (shorter or longer) header.
  auto reassemble = [&good, l](std::vector<std::pair<size_t, size_t>> kv_ranges) {
    return [&good, l, kv_ranges] {
      Bytes b(good.begin(), good.begin() + 24);
      for (const auto& [begin, end] : kv_ranges)
        b.insert(b.end(), good.begin() + static_cast<std::ptrdiff_t>(begin), good.begin() + static_cast<std::ptrdiff_t>(end));
      b.insert(b.end(), good.begin() + static_cast<std::ptrdiff_t>(l.kv_end), good.begin() + static_cast<std::ptrdiff_t>(l.infos_end));
      b.resize((b.size() + 31) / 32 * 32, 0);  // the fixtures use the default alignment, 32
      b.insert(b.end(), good.begin() + static_cast<std::ptrdiff_t>(l.data_offset), good.end());
      put(b, 16, kv_ranges.size(), 8);
      return b;
    };
  };
  std::vector<std::pair<size_t, size_t>> kvs;
  for (const auto& kv : l.kvs) kvs.push_back({kv.begin, kv.end});
  for (size_t k = 0; k < kvs.size(); ++k) {
    auto fewer = kvs;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
    add(fmt::format("key {} removed", k), reassemble(fewer));
  }
  auto more = kvs;
  more.push_back(kvs.back());
  add("last key duplicated", reassemble(more));
  // Random byte flips in the header (metadata and tensor infos) and anywhere.
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 60; ++i) {
    const size_t span = i < 40 ? l.data_offset : good.size();
    const int flips = 1 + static_cast<int>(rng() % 8);
    std::vector<std::pair<size_t, uint8_t>> at;
    for (int k = 0; k < flips; ++k) at.push_back({rng() % span, static_cast<uint8_t>(1u << (rng() % 8))});
    add(fmt::format("{} random bit flips {}", flips, i < 40 ? "in the header" : "anywhere"), [&good, at] {
      Bytes b = good;
      for (const auto& [pos, bit] : at) b[pos] ^= bit;
      return b;
    });
  }
  return out;
}

class CliMutation : public testing::TestWithParam<std::string> {};

TEST_P(CliMutation, EveryOutcomeIsSuccessOrAClearError) {
  const test::Fixture f{GetParam(), test::models_dir()};
  const std::string good_text = test::read_text(f.gguf());
  const Bytes good(good_text.begin(), good_text.end());
  const std::vector<Mutant> all = mutants(good);
  test::ScratchDir dir;
  test::ProcessOptions opt;
  opt.timeout_s = kSanitized ? 120 : 30;
  if (!kSanitized) opt.address_space_limit = uint64_t{2} << 30;
  const long max_rss_kb = kSanitized ? 3L << 20 : 1L << 20;  // KiB
  const size_t stride = kSanitized ? 8 : 1;  // ASan runs every eighth mutant
  std::map<std::string, int> outcomes;
  int bad = 0;
  for (size_t i = 0; i < all.size(); i += stride) {
    const Mutant& m = all[i];
    const std::string model = dir.file("mutant.gguf"), out = dir.file("out.f32");
    const Bytes bytes = m.make();
    test::write_text(model, std::string(bytes.begin(), bytes.end()));
    std::remove(out.c_str());
    const test::CliRun r = test::run_cli({"logits", "-m", model, "--tokens", f.tokens(), "-o", out, "-t", "1"}, opt);
    std::string outcome;
    if (r.signal || r.timed_out) {
      outcome = "signal or hang";
    } else if (r.code == 0) {
      const std::vector<float> v = test::read_floats(out);
      const bool finite = std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
      outcome = finite ? "success" : "success with non-finite logits";
    } else if (r.code == 1 && r.err.starts_with("turbospark: error: ") && r.err.find("out of memory") == std::string::npos &&
               r.err.find("unexpected exception") == std::string::npos) {
      outcome = "clear error";
    } else {
      outcome = "unclear failure";
    }
    if (r.max_rss_kb > max_rss_kb) outcome += " (memory blow-up)";
    ++outcomes[outcome];
    if (outcome != "success" && outcome != "clear error" && bad++ < 10)
      ADD_FAILURE() << m.what << ": " << outcome << ", " << r.describe() << ", peak RSS " << r.max_rss_kb << " KiB\n" << r.err;
  }
  std::printf("%s: %zu mutants run", f.name.c_str(), (all.size() + stride - 1) / stride);
  for (const auto& [k, n] : outcomes) std::printf(", %s %d", k.c_str(), n);
  std::printf("\n");
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CliMutation,
                         testing::Values("llama-dense-q8_0", "qwen3moe-q4_k_m", "gpt-oss-mxfp4", "gemma3-q8_0", "llama-ropefreqs-q8_0"),
                         [](const testing::TestParamInfo<std::string>& p) { return test::test_name(p.param); });

}  // namespace
}  // namespace ts
