// Row-wise and element-wise operations: embeddings, RMS norm, residual adds, biases, gated
// activations, row copies, the rank-ordered combine, output-row selection, steering, half
// conversion. Each mirrors the CPU backend's arithmetic (double sums where the CPU uses them).
#include <algorithm>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/weight_layout.h"

namespace ts::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void embed_kernel(DMat t, StepDev st, float* out) {
  const int64_t i = blockIdx.x;
  const uint8_t* row = t.data + static_cast<int64_t>(st.ids[i]) * t.stride;
  float* dst = out + i * t.cols;
  float v[32];
  for (int64_t g = threadIdx.x; g < t.cols / 32; g += blockDim.x) {
    decode_group(t.type, row, t.cols, g, v);
#pragma unroll
    for (int j = 0; j < 32; ++j) dst[g * 32 + j] = v[j];
  }
}

// One block per (row, group): x is read once for the sum of squares (in double, like the CPU), then
// scaled. out may be x.
// One block per group; each thread holds up to PER values (and their weights) in registers, all
// loaded before the first use: a chain of dependent loads is what a one-row kernel waits on.
template <int PER>
__global__ void __launch_bounds__(1024) rms_norm_kernel(const float* x, const float* w, float eps, int64_t group, float* out, int64_t dim) {
  __shared__ double red[33];
  const int64_t groups = dim / group, row = blockIdx.x / groups, g = blockIdx.x % groups;
  const float* s = x + row * dim + g * group;
  float* d = out + row * dim + g * group;
  float v[PER], wv[PER];
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    const int64_t j = threadIdx.x + u * static_cast<int64_t>(blockDim.x);
    v[u] = j < group ? s[j] : 0.0f;
    wv[u] = j < group ? w[j] : 0.0f;
  }
  double ss = 0;
#pragma unroll
  for (int u = 0; u < PER; ++u) ss += static_cast<double>(v[u]) * v[u];
  ss = block_sum(ss, red);
  const float inv = static_cast<float>(1.0 / sqrt(ss / group + eps));
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    const int64_t j = threadIdx.x + u * static_cast<int64_t>(blockDim.x);
    if (j < group) d[j] = v[u] * inv * wv[u];
  }
}

__global__ void add_kernel(float* dst, const float* src, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) dst[i] += src[i];
}

__global__ void scale_kernel(float* x, float f, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) x[i] *= f;
}

__global__ void add_bias_kernel(float* y, const float* b, int64_t count, int64_t dim) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] += b[i % dim];
}

__global__ void glu_kernel(Activation a, const float* gate, const float* up, float* out, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = glu_value(a, gate[i], up[i]);
}

__global__ void copy_rows_kernel(const float* src, float* dst, const int32_t* rows, int64_t dim, bool scatter) {
  const int64_t i = blockIdx.x;
  const float* s = src + (scatter ? i : rows[i]) * dim;
  float* d = dst + (scatter ? rows[i] : i) * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) d[j] = s[j];
}

// Block (token, slice of 256 values); each thread's k slot values are loaded before they are summed.
constexpr int kMaxRanks = 8;  // the router's k (moe.cu allows at most 8)
__global__ void combine_kernel(const float* slots, const float* weights, int64_t k, int64_t dim, bool accumulate, float* out) {
  const int64_t t = blockIdx.x, j = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= dim) return;
  float sv[kMaxRanks], wv[kMaxRanks];
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r) {
    sv[r] = r < k ? slots[(t * k + r) * dim + j] : 0.0f;
    wv[r] = r < k ? weights[t * k + r] : 0.0f;
  }
  float o = 0.0f;
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r < k) o += wv[r] * sv[r];
  out[t * dim + j] = accumulate ? out[t * dim + j] + o : o;
}

__global__ void select_rows_kernel(const float* x, int64_t dim, StepDev st, int64_t first, float* out) {
  const int64_t i = blockIdx.x;
  const float* s = x + static_cast<int64_t>(st.out_rows[first + i]) * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) out[i * dim + j] = s[j];
}

// CpuBackend::steer, row by row: the projections in double in a fixed order.
__global__ void steer_kernel(float* x, int64_t dim, SteerParams p) {
  __shared__ double red[33];
  float* r = x + blockIdx.x * dim;
  const float* d = p.direction;
  using Mode = SteerParams::Mode;
  if (p.mode == Mode::Add && p.gate <= 0) {
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) r[j] += p.alpha * d[j];
    return;
  }
  double dot = 0, sq = 0;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    dot += static_cast<double>(d[j]) * r[j];
    sq += static_cast<double>(r[j]) * r[j];
  }
  dot = block_sum(dot, red);
  sq = block_sum(sq, red);
  const double c = dot / p.norm;
  if (fabs(c) < p.gate) return;
  if (p.mode == Mode::Add) {
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) r[j] += p.alpha * d[j];
    return;
  }
  const double step = p.mode == Mode::Clamp ? p.target - c : -static_cast<double>(p.alpha) * c;
  double rescale = 1;
  if (p.mode == Mode::Renorm) {
    const double after = sq - p.alpha * (2.0 - p.alpha) * c * c;
    if (after > 0) rescale = sqrt(sq / after);
  }
  const double kk = step / p.norm;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) r[j] = static_cast<float>((r[j] + kk * d[j]) * rescale);
}

__global__ void to_half_kernel(const float* x, int64_t ldx, const int32_t* rows, int64_t cols, __half* hi, __half* lo) {
  const int64_t i = blockIdx.x;
  const float* s = x + (rows ? rows[i] : i) * ldx;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = s[j];
    const __half h = __float2half_rn(v);
    hi[i * cols + j] = h;
    if (lo) lo[i * cols + j] = __float2half_rn(v - __half2float(h));
  }
}

int blocks_for(int64_t count) { return static_cast<int>(ceil_div(count, kThreads)); }

}  // namespace

void embed(const DMat& table, const StepDev& st, float* out, int64_t n, cudaStream_t s) {
  embed_kernel<<<n, 128, 0, s>>>(table, st, out);
  check_launch("embed");
}

void rms_norm(const float* x, const float* w, float eps, int64_t group, float* out, int64_t n, int64_t dim, cudaStream_t s) {
  const int per = group <= 4 * 1024 ? 4 : 16;
  if (group > per * 1024) fail_text("the CUDA backend normalises groups of at most 16384 values; this one has " + std::to_string(group));
  const int threads = static_cast<int>(std::min<int64_t>(1024, std::max<int64_t>(32, ceil_div(ceil_div(group, per), 32) * 32)));
  if (per == 4) rms_norm_kernel<4><<<n * (dim / group), threads, 0, s>>>(x, w, eps, group, out, dim);
  else rms_norm_kernel<16><<<n * (dim / group), threads, 0, s>>>(x, w, eps, group, out, dim);
  check_launch("rms_norm");
}

void add(float* dst, const float* src, int64_t count, cudaStream_t s) {
  add_kernel<<<blocks_for(count), kThreads, 0, s>>>(dst, src, count);
  check_launch("add");
}

void scale(float* x, float f, int64_t count, cudaStream_t s) {
  scale_kernel<<<blocks_for(count), kThreads, 0, s>>>(x, f, count);
  check_launch("scale");
}

void add_bias(float* y, const float* b, int64_t n, int64_t dim, cudaStream_t s) {
  add_bias_kernel<<<blocks_for(n * dim), kThreads, 0, s>>>(y, b, n * dim, dim);
  check_launch("add_bias");
}

void glu(Activation a, const float* gate, const float* up, float* out, int64_t count, int64_t, cudaStream_t s) {
  glu_kernel<<<blocks_for(count), kThreads, 0, s>>>(a, gate, up, out, count);
  check_launch("glu");
}

void copy_rows(const float* src, float* dst, const int32_t* rows, int64_t n, int64_t dim, bool scatter, cudaStream_t s) {
  if (n == 0) return;
  copy_rows_kernel<<<n, 128, 0, s>>>(src, dst, rows, dim, scatter);
  check_launch("copy_rows");
}

void combine_ranked(const float* slots, const float* weights, int64_t n, int64_t k, int64_t dim, bool accumulate, float* out,
                    cudaStream_t s) {
  if (k > kMaxRanks) fail_text("the CUDA backend combines at most 8 experts per token; this model routes " + std::to_string(k));
  combine_kernel<<<dim3(static_cast<unsigned>(n), static_cast<unsigned>(ceil_div(dim, 256))), 256, 0, s>>>(slots, weights, k, dim, accumulate, out);
  check_launch("combine_ranked");
}

void select_rows(const float* x, int64_t dim, const StepDev& st, int64_t first, float* out, int64_t n, cudaStream_t s) {
  select_rows_kernel<<<n, 256, 0, s>>>(x, dim, st, first, out);
  check_launch("select_rows");
}

void steer(float* x, int64_t n, int64_t dim, const SteerParams& p, cudaStream_t s) {
  steer_kernel<<<n, 256, 0, s>>>(x, dim, p);
  check_launch("steer");
}

void to_half(const float* x, int64_t ldx, const int32_t* rows, int64_t n, int64_t cols, __half* hi, __half* lo, cudaStream_t s) {
  if (n == 0) return;
  to_half_kernel<<<n, 256, 0, s>>>(x, ldx, rows, cols, hi, lo);
  check_launch("to_half");
}

}  // namespace ts::gpu
