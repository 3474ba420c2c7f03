// The routed experts' products over many tokens straight from their quantized weights: each block
// takes 64 rows of one expert's matrix and up to 64 of its (token, rank) pairs, decodes the rows'
// 32-value groups into shared memory as halves (decode_group, the definition; the same halves as
// dequant_experts writes) and multiplies them with the pairs' input halves on the tensor cores
// (mma.sync m16n8k16, f32 accumulation). Nothing writes the decoded weights to memory: the pass
// that decodes every used expert's weights to halves for cuBLAS writes and reads back about 1.6 GB
// per layer of the 20b at a prompt step, a third of the step's time.
//
// Block (pair tile, row tile): the pair tiles of one expert are neighbours in x, so the blocks that
// read the same weight rows run at about the same time and share them through L2.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/weight_layout.h"

namespace ts::gpu {
namespace {

constexpr int kRows = 64, kPairs = 64, kK = 64;  // a block's tile and one step of K
constexpr int kPitch = kK + 8;                   // halves per shared row: ldmatrix without bank conflicts

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const __half* p) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// c += a b for one 16x8 tile: a 16x16 (rows: weight rows, row-major), b 16x8 (columns: pairs).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One step's bytes of a thread, fetched a step ahead so that they are in flight during the step
// before's products: its MXFP4 group (16 bytes and the scale; other formats are read when decoded)
// and its 32 input halves. A group past the row's end reads as zeros.
struct Fetched {
  uint4 q = make_uint4(0, 0, 0, 0), x[4] = {};
  uint32_t scale = 0;
  bool weights = false;
};

__device__ __forceinline__ Fetched fetch(GgmlType type, const uint8_t* wrow, const __half* xrow, int64_t cols, int64_t g) {
  Fetched f;
  if (g * 32 >= cols) return f;
  if (wrow) {
    f.weights = true;
    if (type == GgmlType::MXFP4) {
      f.q = *reinterpret_cast<const uint4*>(wrow + g * 16);
      f.scale = wrow[row_layout(type, cols).lo + g];
    }
  }
  if (xrow)
#pragma unroll
    for (int c = 0; c < 4; ++c) f.x[c] = reinterpret_cast<const uint4*>(xrow + g * 32)[c];
  return f;
}

// The fetched group as 32 halves: decode_group's values, rounded as dequant_experts rounds them.
__device__ __forceinline__ void decode_halves(GgmlType type, const uint8_t* wrow, int64_t cols, int64_t g, const Fetched& f,
                                              __half (&h)[32]) {
  if (!f.weights) {
#pragma unroll
    for (int j = 0; j < 32; ++j) h[j] = __float2half_rn(0.0f);
    return;
  }
  if (type == GgmlType::MXFP4) {
    // The doubled e2m1 magnitudes 0, 1, 2, 3, 4, 6, 8, 12 as bytes of two words (one PRMT per
    // value, no table in local memory); code 8 (-0) gives +0, as the table's 0 does.
    const auto value = [](uint32_t code) {
      const int mag = static_cast<int>(__byte_perm(0x03020100u, 0x0C080604u, code & 7));
      return static_cast<float>(code & 8 ? -mag : mag);
    };
    const float d = e8m0_half(static_cast<uint8_t>(f.scale));
    const uint32_t w[4] = {f.q.x, f.q.y, f.q.z, f.q.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t b = (w[i / 4] >> (8 * (i % 4))) & 0xFF;
      h[i] = __float2half_rn(d * value(b & 0xF));
      h[i + 16] = __float2half_rn(d * value(b >> 4));
    }
    return;
  }
  float v[32];
  decode_group(type, wrow, cols, g, v);
#pragma unroll
  for (int j = 0; j < 32; ++j) h[j] = __float2half_rn(v[j]);
}

// y[pair][r] = sum_k W[r][k] x[pair][k] for the tile's pairs and rows. down: W is the expert's down
// matrix ([n_embd][n_ff]); else gate rows then up rows ([2 n_ff][n_embd]). At most 128 registers
// (4 blocks per multiprocessor; ptxas gives 140 unbounded, with no spills at 128).
__global__ void __launch_bounds__(128, 4) expert_gemm_kernel(MoeDev m, bool down, const ExpertTile* tiles,
                                                             const int32_t* n_tiles, const __half* x, float* y) {
  if (static_cast<int32_t>(blockIdx.x) >= *n_tiles) return;  // the grid is sized for the most tiles a step can have
  __shared__ __align__(16) __half ws[kRows * kPitch];
  __shared__ __align__(16) __half xs[kPairs * kPitch];
  const ExpertTile tile = tiles[blockIdx.x];
  const ExpertDev& e = m.table[tile.expert];
  const int64_t K = down ? m.n_ff : m.n_embd, R = down ? m.n_embd : 2 * m.n_ff;
  const GgmlType type = down ? m.down_type : m.gate_type;
  const int64_t stride = down ? m.down_stride : m.gate_stride;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;

  // Thread t decodes group (t % 2) of a step for row t / 2, and loads half of pair t / 2's inputs.
  const int my_row = t / 2, my_half = t % 2;
  const int64_t r = row0 + my_row;
  const uint8_t* wrow = nullptr;
  if (r < R) wrow = down ? e.down + r * stride : (r < m.n_ff ? e.gate + r * stride : e.up + (r - m.n_ff) * stride);
  const __half* xrow = my_row < tile.pairs ? x + (tile.pair0 + my_row) * K : nullptr;

  // Warp w computes rows (w % 2) * 32.. and pairs (w / 2) * 32..: 2 x 4 tiles of 16 x 8.
  const int wm = (warp % 2) * 32, wn = (warp / 2) * 32;
  float acc[2][4][4] = {};
  Fetched next = fetch(type, wrow, xrow, K, my_half);
  for (int64_t k0 = 0; k0 < K; k0 += kK) {
    const int64_t g = k0 / 32 + my_half;
    __align__(16) __half h[32];
    decode_halves(type, wrow, K, g, next, h);
    __syncthreads();  // the previous step's reads of the tiles are done
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      reinterpret_cast<uint4*>(ws + my_row * kPitch + my_half * 32)[c] = reinterpret_cast<const uint4*>(h)[c];
      reinterpret_cast<uint4*>(xs + my_row * kPitch + my_half * 32)[c] = next.x[c];
    }
    __syncthreads();
    next = fetch(type, wrow, xrow, K, g + kK / 32);
#pragma unroll
    for (int ks = 0; ks < kK; ks += 16) {
      uint32_t a[2][4], b[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) ldsm_x4(a[mi], ws + (wm + mi * 16 + lane % 16) * kPitch + ks + (lane / 16) * 8);
      // Two 8-pair tiles per load: matrices (pairs 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15).
#pragma unroll
      for (int nj = 0; nj < 2; ++nj)
        ldsm_x4(b[nj], xs + (wn + nj * 16 + lane % 8 + (lane / 16) * 8) * kPitch + ks + ((lane / 8) % 2) * 8);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni / 2][(ni % 2) * 2], b[ni / 2][(ni % 2) * 2 + 1]);
    }
  }
  // Accumulator c of tile (mi, ni): row wm + 16 mi + lane / 4 (+ 8 for c >= 2), pair wn + 8 ni +
  // 2 (lane % 4) (+ 1 for odd c).
  const int64_t ldy = R;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t row = row0 + wm + mi * 16 + lane / 4 + (c >= 2 ? 8 : 0);
        const int pair = wn + ni * 8 + 2 * (lane % 4) + c % 2;
        if (row < R && pair < tile.pairs) y[(tile.pair0 + pair) * ldy + row] = acc[mi][ni][c];
      }
}

constexpr int kMaxExperts = 256;  // route()'s limit

// The (token, rank) pairs sorted by expert, stably (each expert's pairs ascend by token, as the host
// sort did). Each of the block's warps takes one contiguous chunk of the pairs: it counts its chunk's
// pairs per expert, one thread turns the counts into each warp's first place per expert (chunks in
// order), and every warp then places its chunk 32 pairs at a time, lanes of one expert ranked by lane.
// Only integers are counted, so the order is the host sort's whatever the warps' timing.
constexpr int kSortWarps = 8;
__global__ void __launch_bounds__(kSortWarps * 32) sort_pairs_kernel(const int32_t* experts, int64_t P, int64_t k,
                                                                    int64_t n_expert, int32_t* tok, int32_t* pair_expert,
                                                                    int32_t* sorted_of_slot, int32_t* count, int32_t* first) {
  __shared__ int32_t next[kSortWarps][kMaxExperts];  // a warp's count per expert, then its next place
  const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
  for (int64_t e = lane; e < n_expert; e += 32) next[w][e] = 0;
  const int64_t chunk = (P + 32 * kSortWarps - 1) / (32 * kSortWarps) * 32;
  const int64_t begin = std::min<int64_t>(P, w * chunk), end = std::min<int64_t>(P, begin + chunk);
  // One pass over the chunk: expert e's lanes of an iteration as one group (__match_any_sync).
  auto each = [&](auto&& take) {
    for (int64_t base = begin; base < end; base += 32) {
      const int64_t i = base + lane;
      const int32_t e = i < end ? experts[i] : -1 - static_cast<int32_t>(lane);  // past the end: matches no one
      const unsigned peers = __match_any_sync(0xffffffffu, e);
      if (i < end) take(i, e, peers);
      __syncwarp();
      if (i < end && lane == 31u - __clz(peers)) next[w][e] += __popc(peers);  // the group's last lane
      __syncwarp();
    }
  };
  __syncwarp();
  each([](int64_t, int32_t, unsigned) {});
  __syncthreads();
  if (threadIdx.x == 0)
    for (int64_t e = 0, o = 0; e < n_expert; ++e) {
      first[e] = static_cast<int32_t>(o);
      for (int v = 0; v < kSortWarps; ++v) {
        const int32_t c = next[v][e];
        next[v][e] = static_cast<int32_t>(o);
        o += c;
      }
      count[e] = static_cast<int32_t>(o) - first[e];
    }
  __syncthreads();
  each([&](int64_t i, int32_t e, unsigned peers) {
    const int32_t pos = next[w][e] + __popc(peers & ((1u << lane) - 1u));
    tok[pos] = static_cast<int32_t>(i / k);
    pair_expert[pos] = e;
    sorted_of_slot[i] = pos;
  });
}

// The tiles of the experts with weights in m.table (this wave's): per expert ceil(count / 64),
// placed by one thread's scan, so the tile list is the same for the same routing.
__global__ void expert_tiles_kernel(MoeDev m, const int32_t* count, const int32_t* first, ExpertTile* tiles, int32_t* n_tiles) {
  __shared__ int32_t nt[kMaxExperts], off[kMaxExperts];
  for (int64_t e = threadIdx.x; e < m.n_expert; e += blockDim.x)
    nt[e] = m.table[e].gate && count[e] > 0 ? (count[e] + kPairs - 1) / kPairs : 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t o = 0;
    for (int64_t e = 0; e < m.n_expert; ++e) {
      off[e] = o;
      o += nt[e];
    }
    *n_tiles = o;
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < m.n_expert; e += blockDim.x)
    for (int32_t j = 0; j < nt[e]; ++j)
      tiles[off[e] + j] = ExpertTile{static_cast<int32_t>(e), first[e] + j * kPairs, min(kPairs, count[e] - j * kPairs)};
}

}  // namespace

void sort_pairs(const int32_t* experts, int64_t n, int64_t k, int64_t n_expert, int32_t* sorted, int32_t* count_first,
                cudaStream_t s) {
  if (n_expert > kMaxExperts) fail_text("the CUDA expert sort takes at most " + std::to_string(kMaxExperts) + " experts");
  const int64_t P = n * k;
  sort_pairs_kernel<<<1, kSortWarps * 32, 0, s>>>(experts, P, k, n_expert, sorted, sorted + P, sorted + 2 * P, count_first,
                                      count_first + n_expert);
  check_launch("sort_pairs");
}

int64_t max_expert_tiles(int64_t pairs, int64_t n_expert) { return ceil_div(pairs, kPairs) + std::min(pairs, n_expert); }

void expert_tiles(const MoeDev& m, const int32_t* count_first, ExpertTile* tiles, int32_t* n_tiles, cudaStream_t s) {
  expert_tiles_kernel<<<1, 256, 0, s>>>(m, count_first, count_first + m.n_expert, tiles, n_tiles);
  check_launch("expert_tiles");
}

void expert_gemm(const MoeDev& m, bool down, const ExpertTile* tiles, const int32_t* n_tiles, int64_t max_tiles, const __half* x,
                 float* y, cudaStream_t s) {
  if (max_tiles == 0) return;
  const int64_t R = down ? m.n_embd : 2 * m.n_ff;
  expert_gemm_kernel<<<dim3(static_cast<unsigned>(max_tiles), static_cast<unsigned>(ceil_div(R, kRows))), 128, 0, s>>>(
      m, down, tiles, n_tiles, x, y);
  check_launch("expert_gemm");
}

}  // namespace ts::gpu
