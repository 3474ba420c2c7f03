// Probe (built on request, not by the suite): does one persistent launch per decode step, whose
// blocks wait on counters and issue their first weight loads before waiting, stream a step's
// dependent products faster than separate launches replayed from a CUDA graph? A synthetic step
// shaped like the 20b's: 24 layers of (norm, rotation, attention, attention combine, norm, expert
// combine: one block each) and four int8 products of 2880 columns whose bytes are the 20b's (q/k/v
// 15.7 MB, output projection 12.5, gate/up 35.5, down 17.6), then a norm and the 615 MB head. Every
// row is one warp's exact integer sum, so every variant must give the same bytes; the probe checks.
// Then the same without the one-block ops (each product taking the one before's output): what a
// step whose small work were folded into its products would take.
// Run: persistent_probe [layers = 24] [steps timed = 20]. Results: docs/CUDA_LOG.md, "A persistent
// decode step, probed".
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

constexpr int kCols = 2880, kUnits = kCols / 16, kThreads = 128, kWarps = kThreads / 32;

struct Op {
  const uint4* w;  // rows x kUnits (products); null for a one-block op
  int rows;        // products: rows; one-block ops: 0
  const float* x;  // input (>= kCols values)
  float* y;        // output
  int dep;         // the op whose output x is, or -1
};

__device__ __forceinline__ int warp_sum(int v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ void dot(const uint4& w, const int* xw, int& a) {
  a = __dp4a(static_cast<int>(w.x), xw[0], a);
  a = __dp4a(static_cast<int>(w.y), xw[1], a);
  a = __dp4a(static_cast<int>(w.z), xw[2], a);
  a = __dp4a(static_cast<int>(w.w), xw[3], a);
  // the second byte of a 16-bit activation, as the real products do
  a = __dp4a(static_cast<int>(w.x), xw[0] ^ 0x01010101, a);
  a = __dp4a(static_cast<int>(w.y), xw[1] ^ 0x01010101, a);
  a = __dp4a(static_cast<int>(w.z), xw[2] ^ 0x01010101, a);
  a = __dp4a(static_cast<int>(w.w), xw[3] ^ 0x01010101, a);
}

// Rows 2p and 2p + 1 from the lanes' integer sums (every lane calls it).
__device__ __forceinline__ void store_pair(const Op& op, int p, int a0, int a1) {
  a0 = warp_sum(a0);
  a1 = warp_sum(a1);
  if (threadIdx.x % 32 == 0) {
    op.y[2 * p] = a0 * 1e-5f;
    if (2 * p + 1 < op.rows) op.y[2 * p + 1] = a1 * 1e-5f;
  }
}

// A warp's trip: units ul and ul + 32 of rows 2p and 2p + 1.
__device__ __forceinline__ void load_trip(const Op& op, int p, int ul, uint4 (&t)[4]) {
  const uint4* r0 = op.w + static_cast<size_t>(2 * p) * kUnits;
  const bool two = 2 * p + 1 < op.rows;
  t[0] = r0[ul];
  t[1] = two ? r0[kUnits + ul] : make_uint4(0, 0, 0, 0);
  const bool second = ul + 32 < kUnits;
  t[2] = second ? r0[ul + 32] : make_uint4(0, 0, 0, 0);
  t[3] = second && two ? r0[kUnits + ul + 32] : make_uint4(0, 0, 0, 0);
}

// The block's input as int8, all of a thread's loads issued before any is used (one trip to L2, as
// the backend's staging does).
__device__ __forceinline__ int q8(float v) { return max(-127, min(127, __float2int_rn(v * 100.0f))) & 0xFF; }
__device__ void stage(const float* x, int8_t* xs) {
  constexpr int N4 = kCols / 4, J = (N4 + kThreads - 1) / kThreads;
  __syncthreads();
  float4 v[J];
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int i = threadIdx.x + j * kThreads;
    v[j] = i < N4 ? __ldcg(reinterpret_cast<const float4*>(x) + i) : make_float4(0, 0, 0, 0);
  }
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int i = threadIdx.x + j * kThreads;
    if (i < N4) reinterpret_cast<int*>(xs)[i] = q8(v[j].x) | q8(v[j].y) << 8 | q8(v[j].z) << 16 | q8(v[j].w) << 24;
  }
  __syncthreads();
}

// Block blk of G takes row pairs (round * G + blk) * kWarps + warp; pre holds its first trip if
// issued before the wait.
template <bool Pre>
__device__ void product_body(const Op& op, int blk, int G, int8_t* xs, const uint4 (&pre)[4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pairs = (op.rows + 1) / 2, per_round = G * kWarps, rounds = (pairs + per_round - 1) / per_round;
  const int* xw = reinterpret_cast<const int*>(xs);
  for (int round = 0; round < rounds; ++round) {
    const int p = (round * G + blk) * kWarps + warp;
    if (p >= pairs) continue;
    int a0 = 0, a1 = 0;
    for (int ul = lane; ul < kUnits; ul += 64) {
      uint4 t[4];
      if (Pre && round == 0 && ul == lane) {
        for (int i = 0; i < 4; ++i) t[i] = pre[i];
      } else {
        load_trip(op, p, ul, t);
      }
      dot(t[0], xw + 4 * ul, a0);
      dot(t[1], xw + 4 * ul, a1);
      if (ul + 32 < kUnits) {
        dot(t[2], xw + 4 * (ul + 32), a0);
        dot(t[3], xw + 4 * (ul + 32), a1);
      }
    }
    store_pair(op, p, a0, a1);
  }
}

// One block: y = x / rms(x) (the norms and the step's other one-block work).
__device__ void small_body(const Op& op) {
  __shared__ float part[kWarps];
  constexpr int J = (kCols + kThreads - 1) / kThreads;
  float v[J];
  float ss = 0;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int i = threadIdx.x + j * kThreads;
    v[j] = i < kCols ? __ldcg(op.x + i) : 0.0f;
    ss += v[j] * v[j];
  }
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < kWarps; ++w) t += part[w];
  const float s = rsqrtf(t / kCols + 1e-6f) * 0.5f;
#pragma unroll
  for (int j = 0; j < J; ++j)
    if (threadIdx.x + j * kThreads < kCols) op.y[threadIdx.x + j * kThreads] = v[j] * s;
}

// Variant A: one launch per op.
__global__ void __launch_bounds__(kThreads) product_kernel(Op op) {
  __shared__ __align__(16) int8_t xs[kCols];
  const uint4 none[4] = {};
  stage(op.x, xs);
  product_body<false>(op, blockIdx.x, gridDim.x, xs, none);
}
__global__ void __launch_bounds__(kThreads) small_kernel(Op op) { small_body(op); }

// Variant B: one launch per step; done[j] counts op j's finished blocks over all steps.
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The block waits until op's input is complete for this step: a product is done at G * step
// finished blocks, a one-block op at step.
__device__ void wait_for(const Op* ops, const Op& op, const unsigned* done, unsigned step) {
  if (op.dep < 0) return;
  const unsigned target = (ops[op.dep].w ? gridDim.x : 1u) * step;
  if (threadIdx.x == 0)
    while (ld_acquire(done + op.dep) < target) __nanosleep(20);
  __syncthreads();
}
// After the block's part of op j: its writes, then the count.
__device__ void signal_done(unsigned* done, int j) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(done + j, 1u);
  }
}

// The block's row pairs of a product's first kL2Rounds rounds, fetched into L2 by bulk prefetches
// (no registers, no shared memory; the lanes of each warp take its rounds).
constexpr int kL2Rounds = 4;
__device__ void prefetch_l2(const Op& op, int blk, int G) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pairs = (op.rows + 1) / 2;
  if (lane >= kL2Rounds) return;
  const int p = (lane * G + blk) * kWarps + warp;
  if (p >= pairs) return;
  const unsigned bytes = (2 * p + 1 < op.rows ? 2 : 1) * kCols;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(op.w + static_cast<size_t>(2 * p) * kUnits), "r"(bytes) : "memory");
}
// The next product after op j, or null.
__device__ const Op* next_product(const Op* ops, int n_ops, int j) {
  for (++j; j < n_ops; ++j)
    if (ops[j].w) return &ops[j];
  return nullptr;
}

// L2: 0 none; 1 the block's rows of each product prefetched into L2 before its wait; 2 those of
// the next product prefetched as the block starts each product (one product ahead).
template <bool Pre, bool Wait, int L2 = 0>
__global__ void __launch_bounds__(kThreads, 8) persistent_kernel(const Op* ops, int n_ops, unsigned* done, unsigned step) {
  __shared__ __align__(16) int8_t xs[kCols];
  const int G = gridDim.x, blk = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (L2 == 2)
    if (const Op* first = next_product(ops, n_ops, -1)) prefetch_l2(*first, blk, G);
  for (int j = 0; j < n_ops; ++j) {
    const Op op = ops[j];
    const bool product = op.w != nullptr;
    if (!product && j % G != blk) continue;  // one-block ops are spread over the blocks
    if (L2 == 1 && product) prefetch_l2(op, blk, G);
    if (L2 == 2 && product)
      if (const Op* next = next_product(ops, n_ops, j)) prefetch_l2(*next, blk, G);
    uint4 pre[4] = {};
    if (Pre && product) {
      const int p = blk * kWarps + warp;
      if (p < (op.rows + 1) / 2) load_trip(op, p, lane, pre);
    }
    if (Wait) wait_for(ops, op, done, step);
    if (product) {
      stage(op.x, xs);
      product_body<Pre>(op, blk, G, xs, pre);
    } else {
      small_body(op);
    }
    signal_done(done, j);
  }
}


// Variant E: persistent, and each warp's row pair of the block's next chunk (op, round) copied into
// shared memory by cp.async while the current chunk is computed (two buffers), so a block's next
// weights are in flight across op boundaries and waits without holding registers.
constexpr int kPairBytes = 2 * kCols, kChunkBytes = kWarps * kPairBytes;
__device__ __forceinline__ void cp16(void* smem, const void* g) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ bool has_chunk(const Op& op, int r, int blk, int G) {
  return op.w && (r * G + blk) * kWarps < (op.rows + 1) / 2;
}
// The block's next product chunk after (j, r), or j = -1.
__device__ void advance(const Op* ops, int n_ops, int blk, int G, int& j, int& r) {
  if (j < 0) return;
  ++r;
  for (; j < n_ops; ++j, r = 0)
    if (has_chunk(ops[j], r, blk, G)) return;
  j = -1;
}
__device__ void issue_chunk(const Op* ops, int j, int r, int blk, int G, uint8_t* buf) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (j >= 0) {
    const Op& op = ops[j];
    const int p = (r * G + blk) * kWarps + warp;
    if (p < (op.rows + 1) / 2) {
      const uint4* src = op.w + static_cast<size_t>(2 * p) * kUnits;
      const int units = (2 * p + 1 < op.rows ? 2 : 1) * kUnits;
      uint4* dst = reinterpret_cast<uint4*>(buf + warp * kPairBytes);
      for (int u = lane; u < units; u += 32) cp16(dst + u, src + u);
    }
  }
  cp_commit();  // every thread commits one group per chunk, empty or not, so the counts line up
}
__device__ void compute_chunk(const Op& op, int r, int blk, int G, const uint8_t* buf, const int8_t* xs) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int p = (r * G + blk) * kWarps + warp;
  if (p >= (op.rows + 1) / 2) return;
  const uint4* w = reinterpret_cast<const uint4*>(buf + warp * kPairBytes);
  const int* xw = reinterpret_cast<const int*>(xs);
  const bool two = 2 * p + 1 < op.rows;
  int a0 = 0, a1 = 0;
  for (int ul = lane; ul < kUnits; ul += 32) {
    dot(w[ul], xw + 4 * ul, a0);
    if (two) dot(w[kUnits + ul], xw + 4 * ul, a1);
  }
  store_pair(op, p, a0, a1);
}
template <int D, bool Wait>  // D buffers: D - 1 chunks in flight while one is computed
__global__ void __launch_bounds__(kThreads) pipe_kernel(const Op* ops, int n_ops, unsigned* done, unsigned step) {
  extern __shared__ uint4 dyn[];
  uint8_t* bufs = reinterpret_cast<uint8_t*>(dyn);
  __shared__ __align__(16) int8_t xs[kCols];
  const int G = gridDim.x, blk = blockIdx.x;
  int nj = 0, nr = -1, issued = 0, used = 0;  // the last chunk issued; chunks issued and computed
  for (; issued < D - 1; ++issued) {
    advance(ops, n_ops, blk, G, nj, nr);
    issue_chunk(ops, nj, nr, blk, G, bufs + issued * kChunkBytes);
  }
  for (int j = 0; j < n_ops; ++j) {
    const Op op = ops[j];
    const bool product = op.w != nullptr;
    if (!product && j % G != blk) continue;
    if (Wait) wait_for(ops, op, done, step);
    if (product) {
      stage(op.x, xs);
      for (int r = 0; has_chunk(op, r, blk, G); ++r, ++used) {
        advance(ops, n_ops, blk, G, nj, nr);
        issue_chunk(ops, nj, nr, blk, G, bufs + issued++ % D * kChunkBytes);
        cp_wait<D - 1>();  // the oldest group, chunk (j, r), has landed
        __syncwarp();
        compute_chunk(op, r, blk, G, bufs + used % D * kChunkBytes, xs);
        __syncwarp();
      }
    } else {
      small_body(op);
    }
    signal_done(done, j);
  }
  cp_wait<0>();
}

__global__ void fill_kernel(uint4* w, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    auto next = [&]() {
      h ^= h << 13;
      h ^= h >> 17;
      h ^= h << 5;
      return h;
    };
    w[i] = make_uint4(next(), next(), next(), next());
  }
}

// The weights and buffers of the synthetic step, and its ops: the 20b's layers, with their one-block
// ops or (small = false) the products alone, each taking the one before's output.
struct Step {
  std::vector<Op> ops;
  const float* out = nullptr;  // the head's outputs
  Op* d_ops = nullptr;
  unsigned* done = nullptr;
};
struct Model {
  int layers;
  std::vector<const uint4*> weights;  // the products' weights, in step order (shared by both steps)
  std::vector<int> rows;
  size_t weight_bytes = 0;
  float* x0 = nullptr;
};

static float* device_buffer(size_t n) {
  float* p;
  CK(cudaMalloc(&p, n * sizeof(float)));
  CK(cudaMemset(p, 0, n * sizeof(float)));
  return p;
}

static Model make_model(int layers) {
  const int prod_rows[4] = {15700000 / kCols, 12500000 / kCols, 35500000 / kCols, 17600000 / kCols};
  Model m{layers};
  for (int l = 0; l < layers; ++l) m.rows.insert(m.rows.end(), prod_rows, prod_rows + 4);
  m.rows.push_back(615000000 / kCols);  // the head
  for (size_t i = 0; i < m.rows.size(); ++i) {
    uint4* w;
    const size_t n = static_cast<size_t>(m.rows[i]) * kUnits;
    CK(cudaMalloc(&w, n * sizeof(uint4)));
    fill_kernel<<<1024, 256>>>(w, n, static_cast<unsigned>(i * 7919 + 13));
    CK(cudaGetLastError());
    m.weight_bytes += n * sizeof(uint4);
    m.weights.push_back(w);
  }
  m.x0 = device_buffer(kCols);
  std::vector<float> h(kCols);
  for (int i = 0; i < kCols; ++i) h[i] = ((i * 37) % 101 - 50) / 50.0f;
  CK(cudaMemcpy(m.x0, h.data(), kCols * sizeof(float), cudaMemcpyHostToDevice));
  return m;
}

static Step make_step(const Model& m, bool small_ops) {
  Step st;
  const float* cur = m.x0;
  int cur_op = -1;
  size_t next = 0;  // the next product's weights
  auto push = [&](const uint4* w, int rows) {
    float* y = device_buffer(w ? rows : kCols);
    st.ops.push_back({w, w ? rows : 0, cur, y, cur_op});
    cur = y;
    cur_op = static_cast<int>(st.ops.size()) - 1;
  };
  auto small = [&] {
    if (small_ops) push(nullptr, 0);
  };
  auto prod = [&] {
    push(m.weights[next], m.rows[next]);
    ++next;
  };
  for (int l = 0; l < m.layers; ++l) {
    small();  // norm
    prod();   // q, k, v
    small();  // rotation
    small();  // attention
    small();  // attention combine
    prod();   // output projection
    small();  // norm
    prod();   // gate/up
    prod();   // down
    small();  // expert combine
  }
  small();
  prod();  // head
  st.out = cur;
  CK(cudaMalloc(&st.d_ops, st.ops.size() * sizeof(Op)));
  CK(cudaMemcpy(st.d_ops, st.ops.data(), st.ops.size() * sizeof(Op), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&st.done, st.ops.size() * sizeof(unsigned)));
  return st;
}

int main(int argc, char** argv) {
  const int layers = argc > 1 ? atoi(argv[1]) : 24, reps = argc > 2 ? atoi(argv[2]) : 20;
  const Model model = make_model(layers);
  CK(cudaDeviceSynchronize());

  int sms = 0, per_a = 0, per_b = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_a, product_kernel, kThreads, 0));
  {  // every persistent variant's blocks must all be resident, or a wait could never end
    int v1 = 0, v2 = 0, v3 = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v1, persistent_kernel<true, true>, kThreads, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v2, persistent_kernel<false, true>, kThreads, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v3, persistent_kernel<true, false>, kThreads, 0));
    per_b = std::min(v1, std::min(v2, v3));
    for (auto k : {persistent_kernel<true, true, 1>, persistent_kernel<true, true, 2>}) {
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v1, k, kThreads, 0));
      per_b = std::min(per_b, v1);
    }
  }
  // The pipelined kernels' grids: as many blocks as fit with D chunk buffers each.
  auto pipe_grid = [&](auto with_waits, auto without, int dyn_bytes) {
    int a = 0, b = 0;
    CK(cudaFuncSetAttribute(with_waits, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn_bytes));
    CK(cudaFuncSetAttribute(without, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn_bytes));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, with_waits, kThreads, dyn_bytes));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, without, kThreads, dyn_bytes));
    return std::min(a, b) * sms;
  };
  const int dyn2 = 2 * kChunkBytes, dyn4 = 4 * kChunkBytes;
  const int GE2 = pipe_grid(pipe_kernel<2, true>, pipe_kernel<2, false>, dyn2);
  const int GE4 = pipe_grid(pipe_kernel<4, true>, pipe_kernel<4, false>, dyn4);
  const int GA = per_a * sms, GB = per_b * sms;
  printf("%d layers, %.3f GB of weights; %d SMs; blocks per SM: launches %d, persistent %d, pipelined %d (2 buffers) and %d (4)\n",
         layers, model.weight_bytes / 1e9, sms, per_a, per_b, GE2 / sms, GE4 / sms);

  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const size_t out_n = model.rows.back();
  const double gb = model.weight_bytes / 1e9;
  auto elapsed = [&](auto&& one_step) {  // ms per step, after 3 untimed
    for (int i = 0; i < 3; ++i) one_step();
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < reps; ++i) one_step();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / reps;
  };

  for (bool small_ops : {true, false}) {
    const Step st = make_step(model, small_ops);
    const int n_ops = static_cast<int>(st.ops.size());
    printf("-- %d ops: %s\n", n_ops, small_ops ? "products and one-block ops" : "the products alone, each taking the one before's output");
    // A: separate launches (products on grid blocks), replayed from a graph
    auto capture = [&](int grid) {
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (const Op& op : st.ops) {
        if (op.w) product_kernel<<<grid, kThreads, 0, s>>>(op);
        else small_kernel<<<1, kThreads, 0, s>>>(op);
      }
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      return ge;
    };
    const cudaGraphExec_t ga = capture(GA), gb_grid = capture(GB);
    auto time_a = [&](cudaGraphExec_t g) { return elapsed([&] { CK(cudaGraphLaunch(g, s)); }); };
    // A persistent kernel's step time on grid blocks with dyn_bytes of dynamic shared memory.
    auto time_p = [&](auto kernel, int grid, int dyn_bytes) {
      CK(cudaMemsetAsync(st.done, 0, n_ops * sizeof(unsigned), s));
      unsigned step = 0;
      return elapsed([&] { kernel<<<grid, kThreads, dyn_bytes, s>>>(st.d_ops, n_ops, st.done, ++step); });
    };
    std::vector<float> ref(out_n), got(out_n);
    auto fetch = [&](std::vector<float>& v) { CK(cudaMemcpy(v.data(), st.out, out_n * sizeof(float), cudaMemcpyDeviceToHost)); };
    auto same = [&] {
      fetch(got);
      return memcmp(ref.data(), got.data(), out_n * sizeof(float)) == 0 ? "same bytes" : "BYTES DIFFER";
    };
    auto row = [&](int round, const char* what, float ms, const char* check) {
      printf("round %d: %-58s %.3f ms  %5.0f GB/s  %s\n", round, what, ms, gb / ms * 1e3, check);
    };
    for (int round = 0; round < 3; ++round) {
      const float a = time_a(ga);
      fetch(ref);
      row(round, "launches in a graph", a, "(reference)");
      const float a2 = time_a(gb_grid);
      row(round, "launches in a graph, the persistent kernel's grid", a2, same());
      const float b = time_p(persistent_kernel<true, true>, GB, 0);
      row(round, "persistent, first trip loaded before the wait", b, same());
      const float c = time_p(persistent_kernel<false, true>, GB, 0);
      row(round, "persistent, loads after the wait", c, same());
      row(round, "persistent, no waits (wrong results; ceiling)", time_p(persistent_kernel<true, false>, GB, 0), "-");
      const float l1 = time_p(persistent_kernel<true, true, 1>, GB, 0);
      row(round, "persistent, its rows prefetched to L2 before the wait", l1, same());
      const float l2 = time_p(persistent_kernel<true, true, 2>, GB, 0);
      row(round, "persistent, the next product's rows prefetched to L2", l2, same());
      const float e2 = time_p(pipe_kernel<2, true>, GE2, dyn2);
      row(round, "persistent, 1 chunk copied ahead (cp.async)", e2, same());
      row(round, "the same, no waits (ceiling)", time_p(pipe_kernel<2, false>, GE2, dyn2), "-");
      const float e4 = time_p(pipe_kernel<4, true>, GE4, dyn4);
      row(round, "persistent, 3 chunks copied ahead (cp.async)", e4, same());
      row(round, "the same, no waits (ceiling)", time_p(pipe_kernel<4, false>, GE4, dyn4), "-");
    }
  }
  return 0;
}
