#include "runtime/bench.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "model/forward.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ts {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

uint64_t mat_bytes(const Mat& m) { return m.data ? static_cast<uint64_t>(m.rows) * m.row_stride : 0; }

// A deterministic stream of token ids in [0, n_vocab) (xorshift), so runs are comparable.
std::vector<int32_t> token_ids(int64_t n, int64_t n_vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& id : ids) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    id = static_cast<int32_t>(s % static_cast<uint64_t>(n_vocab));
  }
  return ids;
}

}  // namespace

Spread spread(std::vector<double> samples) {
  Spread s;
  if (samples.empty()) return s;
  const double n = static_cast<double>(samples.size());
  for (double v : samples) s.mean += v / n;
  for (double v : samples) s.sd += (v - s.mean) * (v - s.mean);
  s.sd = samples.size() > 1 ? std::sqrt(s.sd / (n - 1)) : 0.0;
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  s.samples = std::move(samples);
  return s;
}

uint64_t decode_weight_bytes(const Model& m) {
  const HParams& h = m.hp();
  const Mat& e = m.token_embd();
  uint64_t bytes = e.row_stride + mat_bytes(m.output()) + static_cast<uint64_t>(h.n_embd) * 4;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const LayerWeights& w = m.layer(l);
    for (const Mat* x : {&w.q, &w.k, &w.v, &w.o, &w.ffn_gate, &w.ffn_up, &w.ffn_down, &w.router}) bytes += mat_bytes(*x);
    bytes += static_cast<uint64_t>(h.n_embd) * 4 * 2;  // the two norms (biases and sinks are smaller still)
    if (h.is_moe()) {
      bytes += static_cast<uint64_t>(h.n_expert_used) * m.expert_source()->expert_bytes(l);
    }
  }
  return bytes;
}

BenchResult run_bench(const Model& m, Backend& be, const BenchConfig& c) {
  if (c.reps < 1) fail("the number of repetitions must be positive");
  if (c.n_prompt < 0 || c.n_gen < 0 || c.n_depth < 0) fail("-p, -n and -d must not be negative");
  if (c.n_prompt + c.n_gen == 0) fail("nothing to measure: -p and -n are both 0");
  const HParams& h = m.hp();
  KvCache kv(be, h, std::max<int64_t>(1, c.n_depth + std::max(c.n_prompt, c.n_gen)));
  ForwardOptions fo;
  fo.max_batch = std::max<int64_t>(1, std::min(c.batch, std::max<int64_t>(std::max(c.n_prompt, c.n_depth), 1)));
  Forward fwd(m, be, fo);
  std::vector<float> logits(static_cast<size_t>(h.n_vocab));
  BenchResult r;

  auto feed = [&](const std::vector<int32_t>& ids, int64_t chunk) {
    for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(chunk)) {
      const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(ids.size() - i));
      fwd.run(kv, ids.data() + i, n, false, logits.data());
    }
  };
  // Each test starts right after the depth's tokens: the cache's first n_depth positions are written
  // once, and every test overwrites only what lies past them.
  auto timed = [&](const std::vector<int32_t>& ids, int64_t chunk) {
    kv.n_past = c.n_depth;
    const double t0 = now();
    feed(ids, chunk);
    const double t = now() - t0;
    r.positions = std::max(r.positions, kv.n_past);
    return t;
  };

  r.decode_bytes = decode_weight_bytes(m);
  if (c.n_depth > 0) {
    kv.n_past = 0;
    feed(token_ids(c.n_depth, h.n_vocab, 97), fo.max_batch);
  }
  std::vector<double> pp, tg;
  // Warm-up: touches every weight page and sizes every buffer before anything is timed.
  if (c.n_prompt > 0) timed(token_ids(std::min<int64_t>(c.n_prompt, fo.max_batch), h.n_vocab, 99), fo.max_batch);
  if (c.n_gen > 0) timed(token_ids(std::min<int64_t>(c.n_gen, 4), h.n_vocab, 98), 1);
  for (int rep = 0; rep < c.reps; ++rep) {
    if (c.n_prompt > 0)
      pp.push_back(static_cast<double>(c.n_prompt) / timed(token_ids(c.n_prompt, h.n_vocab, 2 * rep), fo.max_batch));
    if (c.n_gen > 0) tg.push_back(static_cast<double>(c.n_gen) / timed(token_ids(c.n_gen, h.n_vocab, 2 * rep + 1), 1));
  }
  r.pp = spread(std::move(pp));
  r.tg = spread(std::move(tg));
  return r;
}

double measure_read_bandwidth(int threads) {
  constexpr size_t kBytes = size_t{512} << 20, kChunk = size_t{1} << 20;
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, kBytes));
  if (!buf) fail("out of memory allocating {} MiB to measure the read bandwidth", kBytes >> 20);
  const std::unique_ptr<uint8_t, decltype(&std::free)> hold(buf, &std::free);
  std::memset(buf, 1, kBytes);
  ThreadPool pool(threads);
  const int64_t chunks = static_cast<int64_t>(kBytes / kChunk);
  std::vector<uint64_t> sink(static_cast<size_t>(chunks));
  double best = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const double t0 = now();
    pool.parallel_for(chunks, [&](int64_t c) {
      const auto* p = reinterpret_cast<const __m128i*>(buf + static_cast<size_t>(c) * kChunk);
      __m128i acc0 = _mm_setzero_si128(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
      for (size_t i = 0; i < kChunk / 16; i += 4) {
        acc0 = _mm_add_epi64(acc0, _mm_load_si128(p + i));
        acc1 = _mm_add_epi64(acc1, _mm_load_si128(p + i + 1));
        acc2 = _mm_add_epi64(acc2, _mm_load_si128(p + i + 2));
        acc3 = _mm_add_epi64(acc3, _mm_load_si128(p + i + 3));
      }
      const __m128i s = _mm_add_epi64(_mm_add_epi64(acc0, acc1), _mm_add_epi64(acc2, acc3));
      sink[static_cast<size_t>(c)] = static_cast<uint64_t>(_mm_cvtsi128_si64(s));
    });
    best = std::max(best, static_cast<double>(kBytes) / (now() - t0));
  }
  return best;
}

}  // namespace ts
