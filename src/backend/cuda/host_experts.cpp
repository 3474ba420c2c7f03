#include "backend/cuda/host_experts.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "backend/cuda/glu.h"
#include "backend/cuda/weight_layout.h"
#include "util/cpu_features.h"
#include "util/error.h"

namespace ts::gpu {
namespace {

constexpr int kRowsPerTask = 32;
constexpr int8_t kDoubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};  // quant_dot.cuh's mxfp4_bytes

// __float2int_rn: round to nearest even, NaN to 0, saturating.
int32_t to_int_rn(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (f <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(std::nearbyint(f));
}

// stage_q for MXFP4, written in QRow's forms.
void quantize(const float* x, int64_t cols, int16_t* q, int8_t* h, int8_t* l, int32_t* q12, float* d) {
  for (int64_t g = 0; g < cols / 32; ++g) {
    const float* v = x + 32 * g;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float inv = amax > 0 ? 32639.0f / amax : 0.0f;
    d[g] = amax / 32639.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int32_t qi = to_int_rn(v[j] * inv);
      q[32 * g + j] = static_cast<int16_t>(qi);
      const int64_t at = 64 * (g / 2) + 16 * (g % 2) + 32 * (j / 16) + j % 16;
      h[at] = static_cast<int8_t>((qi + 128) >> 8);
      l[at] = static_cast<int8_t>(qi - 256 * ((qi + 128) >> 8));
      sum += qi;
    }
    q12[g] = 12 * sum;
  }
}

// A row's dot with the quantized input, as one warp of mv_kernel computes it: S holds `units`
// (rounded up to 16) integer sums, sc the matching products of the two scales, both zero past
// `units` (an fma of zeros leaves a lane's sum as it is: the sums start at +0 and never become -0).
struct RowScratch {
  alignas(64) int32_t S[4096 / 32 + 16];
  alignas(64) float sc[4096 / 32 + 16];
};

// e8m0_half of every scale byte.
const std::array<float, 256>& e8m0_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> v{};
    for (int e = 0; e < 256; ++e) v[e] = e8m0_half(static_cast<uint8_t>(e));
    return v;
  }();
  return t;
}

void scales(const uint8_t* row, const RowLayout& L, const QRow& x, int units, RowScratch& r) {
  const std::array<float, 256>& t = e8m0_table();
  for (int u = 0; u < units; ++u) r.sc[u] = t[row[L.lo + u]] * x.d[u];
  for (int u = units; u % 16; ++u) {
    r.sc[u] = 0.0f;
    r.S[u] = 0;
  }
}

float dot_scalar(const uint8_t* row, const RowLayout& L, const QRow& x, int units, RowScratch& r) {
  scales(row, L, x, units, r);
  float lane[32] = {};
  for (int u = 0; u < units; ++u) {
    int32_t s = 0;
    for (int b = 0; b < 16; ++b) {
      const uint8_t w = row[16 * u + b];
      s += kDoubled[w & 15] * x.q[32 * u + b] + kDoubled[w >> 4] * x.q[32 * u + 16 + b];
    }
    lane[u % 32] = std::fma(static_cast<float>(s), r.sc[u], lane[u % 32]);
  }
  for (int o = 16; o > 0; o >>= 1) {
    float t[32];
    for (int i = 0; i < 32; ++i) t[i] = lane[i] + lane[i ^ o];
    std::copy(t, t + 32, lane);
  }
  return lane[0];
}

// scales() eight units at a time (the bits of e8m0_half computed, not looked up); the tail as scales().
// The fast paths call it after a row's units: the scales follow them in the row, so the row is read
// front to back, which the hardware prefetcher follows (reading the scales first, every row began
// with a jump to its end: 7.9 against 12.2 GB/s on one Zen 4 thread).
__attribute__((target("avx2"))) void scales_avx2(const uint8_t* row, const RowLayout& L, const QRow& x, int units,
                                                 RowScratch& r) {
  int u = 0;
  for (; u + 8 <= units; u += 8) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + L.lo + u)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);  // e = 0, 1: subnormal
    const __m256i bits = _mm256_blendv_epi8(sub, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1)));
    _mm256_store_ps(r.sc + u, _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_loadu_ps(x.d + u)));
  }
  const std::array<float, 256>& t = e8m0_table();
  for (; u < units; ++u) r.sc[u] = t[row[L.lo + u]] * x.d[u];
  for (; u % 16; ++u) {
    r.sc[u] = 0.0f;
    r.S[u] = 0;
  }
}

// Unit u's 32 products with q as eight partial sums.
__attribute__((target("avx2"))) inline __m256i unit_avx2(const uint8_t* row, const int16_t* q, int u) {
  const __m128i lut = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kDoubled)), m4 = _mm_set1_epi8(0x0F);
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * u));
  const __m256i lo = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(lut, _mm_and_si128(b, m4)));
  const __m256i hi = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m4)));
  const __m256i* qu = reinterpret_cast<const __m256i*>(q + 32 * u);
  return _mm256_add_epi32(_mm256_madd_epi16(lo, _mm256_loadu_si256(qu)), _mm256_madd_epi16(hi, _mm256_loadu_si256(qu + 1)));
}

// Lane l's chain over units l, l + 32, ... (vector v holds lanes 8v .. 8v + 7), then warp_sum's
// butterfly: lanes l and l ^ o added, o = 16, 8, 4, 2, 1.
__attribute__((target("avx2,fma"))) float lanes_avx2(const RowScratch& r, int units) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int u0 = 0; u0 < units; u0 += 8) {
    const __m256 s = _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(r.S + u0)));
    acc[(u0 / 8) % 4] = _mm256_fmadd_ps(s, _mm256_load_ps(r.sc + u0), acc[(u0 / 8) % 4]);
  }
  __m256 v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
  v = _mm256_add_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_add_ps(v, _mm256_shuffle_ps(v, v, 0x4E));
  v = _mm256_add_ps(v, _mm256_shuffle_ps(v, v, 0xB1));
  return _mm256_cvtss_f32(v);
}

__attribute__((target("avx2,fma"))) float dot_avx2(const uint8_t* row, const RowLayout& L, const QRow& x, int units,
                                                   RowScratch& r) {
  for (int u0 = 0; u0 < units; u0 += 8) {
    __m256i p[8];
    for (int i = 0; i < 8; ++i) p[i] = u0 + i < units ? unit_avx2(row, x.q, u0 + i) : _mm256_setzero_si256();
    // Eight units' eight partial sums each reduced to their eight sums (integer adds: exact in any order).
    const __m256i t0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i t1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    const __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20), _mm256_permute2x128_si256(t0, t1, 0x31));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r.S + u0), s);
  }
  scales_avx2(row, L, x, units, r);
  return lanes_avx2(r, units);
}

// VNNI: the weights offset to unsigned bytes (w + 12), multiplied with q's signed bytes h and l by
// vpdpbusd, two units per vector; S = 256 sum (w + 12) h + sum (w + 12) l - 12 sum q. About a third
// of the AVX2 path's shuffles, which bound it. Reads up to 16 bytes past a row's last unit (inside its
// stride: the scales follow), against zero h and l.
#define TS_VNNI __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni")))
TS_VNNI inline __m256i pair_vnni(const uint8_t* row, const QRow& x, int u) {
  constexpr uint8_t kOffset[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kOffset)));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * u));
  const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(b, m4));
  const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(b, 4), m4));
  const __m256i* h = reinterpret_cast<const __m256i*>(x.h + 32 * u);
  const __m256i* l = reinterpret_cast<const __m256i*>(x.l + 32 * u);
  const __m256i z = _mm256_setzero_si256();
  const __m256i sh = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(z, lo, _mm256_loadu_si256(h)), hi, _mm256_loadu_si256(h + 1));
  const __m256i sl = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(z, lo, _mm256_loadu_si256(l)), hi, _mm256_loadu_si256(l + 1));
  return _mm256_add_epi32(_mm256_slli_epi32(sh, 8), sl);  // lanes 0..3: unit u's partial sums, 4..7: u + 1's
}

TS_VNNI float dot_vnni(const uint8_t* row, const RowLayout& L, const QRow& x, int units, RowScratch& r) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int u0 = 0; u0 < units; u0 += 8) {
    __m256i p[4];
    for (int i = 0; i < 4; ++i) p[i] = u0 + 2 * i < units ? pair_vnni(row, x, u0 + 2 * i) : _mm256_setzero_si256();
    // Lanes [u0, u0+2, u0+4, u0+6 | u0+1, u0+3, u0+5, u0+7], then in order, less 12 sum q.
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i s = _mm256_sub_epi32(_mm256_permutevar8x32_epi32(t, order), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q12 + u0)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(r.S + u0), s);
  }
  scales_avx2(row, L, x, units, r);
  return lanes_avx2(r, units);
}
#undef TS_VNNI

using DotFn = float (*)(const uint8_t*, const RowLayout&, const QRow&, int, RowScratch&);
DotFn dot_for(HostExperts::Path p) {
  switch (p) {
    case HostExperts::Path::Vnni: return dot_vnni;
    case HostExperts::Path::Avx2: return dot_avx2;
    case HostExperts::Path::Scalar: break;
  }
  return dot_scalar;
}

}  // namespace

HostExperts::Path HostExperts::best_path() {
  const CpuFeatures& f = cpu_features();
  return f.avx512_vnni ? Path::Vnni : f.avx2 ? Path::Avx2 : Path::Scalar;
}

HostExperts::HostExperts(int threads, Path path) : pool_(std::max(1, threads)), path_(path) {
  if ((path == Path::Vnni && !cpu_features().avx512_vnni) || (path == Path::Avx2 && !cpu_features().avx2))
    fail("internal error: host expert products for an instruction set this CPU lacks");
}

bool HostExperts::supports(const ExpertWeights& w, Activation act) {
  const auto fits = [](const Mat& m) { return m.type == GgmlType::MXFP4 && m.cols % 32 == 0 && m.cols <= 4096; };
  return glu_on_host(act) && fits(w.gate) && fits(w.up) && fits(w.down) && w.gate.rows == w.up.rows &&
         w.down.cols == w.gate.rows;
}

void HostExperts::Quantized::resize(int64_t n, int64_t cols) {
  stride = cols + kPad;
  q.assign(n * stride, 0);
  h.assign(n * stride, 0);
  l.assign(n * stride, 0);
  q12.assign(n * stride / 32, 0);
  d.assign(n * stride / 32, 0.0f);
}

QRow HostExperts::Quantized::row(int64_t j) const {
  const int64_t o = j * stride;
  return QRow{q.data() + o, h.data() + o, l.data() + o, q12.data() + o / 32, d.data() + o / 32};
}

void HostExperts::Quantized::set(int64_t j, const float* x, int64_t cols) {
  const int64_t o = j * stride;
  quantize(x, cols, q.data() + o, h.data() + o, l.data() + o, q12.data() + o / 32, d.data() + o / 32);
}

// Rows [r0, r1) of one job's gate/up pairs (gated into act_) or of its down matrix (into out).
void HostExperts::rows(const Job& job, int64_t j, bool down, int64_t r0, int64_t r1, Activation act) {
  const DotFn dot = dot_for(path_);
  const ExpertWeights& w = *job.w;
  const int64_t cols = down ? w.down.cols : w.gate.cols;
  const QRow x = (down ? act_q_ : x_q_).row(j);
  const RowLayout L = row_layout(GgmlType::MXFP4, cols);
  const int units = static_cast<int>(cols / 32);
  const auto row = [&](const Mat& m, int64_t i) { return static_cast<const uint8_t*>(m.data) + i * m.row_stride; };
  RowScratch rs;
  for (int64_t i = r0; i < r1; ++i) {
    if (down) {
      job.out[i] = dot(row(w.down, i), L, x, units, rs) + (w.down_bias ? w.down_bias[i] : 0.0f);
    } else {
      const float g = dot(row(w.gate, i), L, x, units, rs) + (w.gate_bias ? w.gate_bias[i] : 0.0f);
      const float u = dot(row(w.up, i), L, x, units, rs) + (w.up_bias ? w.up_bias[i] : 0.0f);
      act_[j * w.gate.rows + i] = glu_value(act, g, u);
    }
  }
}

void HostExperts::run(std::span<const Job> jobs, Activation act) {
  if (jobs.empty()) return;
  const ExpertWeights& w0 = *jobs[0].w;
  for (const Job& j : jobs)
    if (!supports(*j.w, act) || j.w->gate.cols != w0.gate.cols || j.w->gate.rows != w0.gate.rows || j.w->down.rows != w0.down.rows)
      fail("internal error: host experts of a shape or format the device products do not share");
  const int64_t n = static_cast<int64_t>(jobs.size()), cols = w0.gate.cols, n_ff = w0.gate.rows, n_out = w0.down.rows;
  x_q_.resize(n, cols);
  act_q_.resize(n, n_ff);
  act_.resize(n * n_ff);
  // Quantizing is a pass over a few thousand values: on this thread, not worth waking the pool.
  for (int64_t j = 0; j < n; ++j) x_q_.set(j, jobs[j].x, cols);
  const int64_t gu_tasks = (n_ff + kRowsPerTask - 1) / kRowsPerTask, down_tasks = (n_out + kRowsPerTask - 1) / kRowsPerTask;
  pool_.parallel_for(n * gu_tasks, [&](int64_t t) {
    const int64_t j = t / gu_tasks, r0 = t % gu_tasks * kRowsPerTask;
    rows(jobs[j], j, false, r0, std::min(n_ff, r0 + kRowsPerTask), act);
  });
  for (int64_t j = 0; j < n; ++j) act_q_.set(j, act_.data() + j * n_ff, n_ff);
  pool_.parallel_for(n * down_tasks, [&](int64_t t) {
    const int64_t j = t / down_tasks, r0 = t % down_tasks * kRowsPerTask;
    rows(jobs[j], j, true, r0, std::min(n_out, r0 + kRowsPerTask), act);
  });
}

}  // namespace ts::gpu
