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
  if (c.sequences < 1) fail("the number of sequences must be positive");
  const HParams& h = m.hp();
  const int64_t S = c.n_gen > 0 ? c.sequences : 1;
  std::vector<std::unique_ptr<KvCache>> kv;  // kv[0] also takes the pp test
  for (int64_t s = 0; s < S; ++s)
    kv.push_back(std::make_unique<KvCache>(be, h, std::max<int64_t>(1, c.n_depth + (s == 0 ? std::max(c.n_prompt, c.n_gen) : c.n_gen))));
  ForwardOptions fo;
  fo.max_batch = std::max<int64_t>(S, std::min(c.batch, std::max<int64_t>(std::max(c.n_prompt, c.n_depth), 1)));
  Forward fwd(m, be, fo);
  std::vector<float> logits(static_cast<size_t>(S * h.n_vocab));
  BenchResult r;

  auto feed = [&](KvCache& cache, const std::vector<int32_t>& ids, int64_t chunk) {
    for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(chunk)) {
      const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(ids.size() - i));
      fwd.run(cache, ids.data() + i, n, false, logits.data());
    }
  };
  // Each test starts right after the depth's tokens: the caches' first n_depth positions are written
  // once, and every test overwrites only what lies past them. tg decodes sequence s's ids[s]; `fed`
  // counts the tokens a test put into the caches.
  int64_t fed = 0;
  auto timed = [&](const std::vector<std::vector<int32_t>>& ids, int64_t chunk) {
    for (auto& k : kv) k->n_past = c.n_depth;
    const double t0 = now();
    if (ids.size() == 1) {
      feed(*kv[0], ids[0], chunk);
    } else {
      std::vector<SeqStep> step(ids.size());
      for (size_t i = 0; i < ids[0].size(); ++i) {
        for (size_t s = 0; s < ids.size(); ++s) step[s] = SeqStep{kv[s].get(), ids[s].data() + i, 1, false, logits.data() + s * h.n_vocab};
        fwd.run(step);
      }
    }
    const double t = now() - t0;
    fed = 0;
    for (auto& k : kv) {
      r.positions = std::max(r.positions, k->n_past);
      fed += k->n_past - c.n_depth;
    }
    return t;
  };
  auto tg_ids = [&](int64_t n, uint64_t seed) {
    std::vector<std::vector<int32_t>> ids;
    for (int64_t s = 0; s < S; ++s) ids.push_back(token_ids(n, h.n_vocab, seed + 1000 * static_cast<uint64_t>(s)));
    return ids;
  };

  r.decode_bytes = decode_weight_bytes(m);
  if (c.n_depth > 0)
    for (auto& k : kv) {
      k->n_past = 0;
      feed(*k, token_ids(c.n_depth, h.n_vocab, 97), fo.max_batch);
    }
  std::vector<double> pp, tg;
  // Warm-up: touches every weight page and sizes every buffer before anything is timed.
  if (c.n_prompt > 0) timed({token_ids(std::min<int64_t>(c.n_prompt, fo.max_batch), h.n_vocab, 99)}, fo.max_batch);
  if (c.n_gen > 0) timed(tg_ids(std::min<int64_t>(c.n_gen, 4), 98), 1);
  for (int rep = 0; rep < c.reps; ++rep) {
    if (c.n_prompt > 0)
      pp.push_back(static_cast<double>(c.n_prompt) / timed({token_ids(c.n_prompt, h.n_vocab, 2 * rep)}, fo.max_batch));
    if (c.n_gen > 0) {
      const double t = timed(tg_ids(c.n_gen, 2 * rep + 1), 1);
      tg.push_back(static_cast<double>(fed) / t);
      r.tg_tokens = fed;
    }
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
