// The CUDA backend's kernel launchers: plain host functions, one family of kernels per .cu file,
// all launched on the stream they are given and checked (check.h). Pointers are device memory
// unless a comment says otherwise.
#pragma once
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"

namespace ts::gpu {

// A weight matrix in the backend's layout (weight_layout.h): `rows` rows of `cols` values,
// `stride` bytes apart.
struct DMat {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0, cols = 0, stride = 0;
};
inline DMat dmat(const Mat& m) { return DMat{m.type, static_cast<const uint8_t*>(m.data), m.rows, m.cols, static_cast<int64_t>(m.row_stride)}; }

// One sequence of the step as the kernels see it. Its cache holds, per layer, K then V as
// [n_head_kv][n_ctx][head_dim] halves.
struct DevSeq {
  __half* kv = nullptr;
  int64_t n_ctx = 0;
  int32_t row0 = 0, n = 0, pos0 = 0, pad = 0;
};

// The current step on the device (Backend::begin_step). The arrays live at fixed addresses, so a
// recorded step reads the next step's values; the counts are the step's shape (its key).
struct StepDev {
  const int32_t* ids = nullptr;       // [n_rows]
  const int32_t* pos = nullptr;       // [n_rows]
  const int32_t* seq = nullptr;       // [n_rows] index into seqs
  const DevSeq* seqs = nullptr;       // [n_seqs]
  const int32_t* out_rows = nullptr;  // [n_out]
  int32_t n_rows = 0, n_seqs = 0, n_out = 0, max_seq_rows = 0;
};

// Small vectors and rows.
void embed(const DMat& table, const StepDev& st, float* out, int64_t n, cudaStream_t s);
void rms_norm(const float* x, const float* w, float eps, int64_t group, float* out, int64_t n, int64_t dim, cudaStream_t s);
void add(float* dst, const float* src, int64_t count, cudaStream_t s);
void scale(float* x, float f, int64_t count, cudaStream_t s);
void add_bias(float* y, const float* b, int64_t n, int64_t dim, cudaStream_t s);
void glu(Activation a, const float* gate, const float* up, float* out, int64_t count, int64_t dim, cudaStream_t s);
// dst.row(i) = src.row(rows[i]) (gather) or dst.row(rows[i]) = src.row(i) (scatter).
void copy_rows(const float* src, float* dst, const int32_t* rows, int64_t n, int64_t dim, bool scatter, cudaStream_t s);
// out.row(t) = sum over r < k, ascending, of weights[t*k + r] * slots.row(t*k + r); with
// `accumulate`, out.row(t) += that sum (one pass instead of a sum and an add).
void combine_ranked(const float* slots, const float* weights, int64_t n, int64_t k, int64_t dim, bool accumulate, float* out,
                    cudaStream_t s);
void select_rows(const float* x, int64_t dim, const StepDev& st, int64_t first, float* out, int64_t n, cudaStream_t s);
void steer(float* x, int64_t n, int64_t dim, const SteerParams& p, cudaStream_t s);
// f32 rows (optionally picked through `rows`) to halves; with `lo`, also the rounding remainder
// x - half(x) as a second half matrix (hi + lo carries ~22 bits).
void to_half(const float* x, int64_t ldx, const int32_t* rows, int64_t n, int64_t cols, __half* hi, __half* lo, cudaStream_t s);

// Attention (attention.cu). rope_angles writes each row's rotation (cos, then sin, of its n_rot / 2
// pairs) to angles[n_rows][kRopeRowFloats], once per step and RopeParams. attention rotates q and k
// with it (when `p.rope`; q and k may be rotated in place), writes k and v as halves into each row's
// cache at its position, and attends.
constexpr int kRopeRowFloats = 512;  // n_rot <= 512 (a clear error otherwise)
void rope_angles(const RopeParams& rope, const StepDev& st, float* angles, cudaStream_t s);
// Scratch for split-KV decoding: [n_rows][n_head][splits] partials of (head_dim + 2) floats.
int64_t attention_scratch_floats(const AttentionParams& p, const StepDev& st);
void attention(float* q, float* k, const float* v, int64_t layer, const AttentionParams& p, const StepDev& st, const float* angles,
               float* scratch, float* out, cudaStream_t s);

// Products with weights. matvec.cu: few rows, every output of one call sharing the input and the
// weight type and width, each row's sums in one order whatever else shares the call. gemm.cu: many
// rows, weights decoded to halves and multiplied by cuBLAS (F32 weights as they are, through cuBLAS's
// f32 GEMM).
struct MatOut {
  DMat w;
  float* y = nullptr;
  int64_t ldy = 0;
  const float* bias = nullptr;
  bool accumulate = false;
};
inline constexpr int kMaxOuts = 3;
inline constexpr int64_t kMatvecMaxRows = 4;  // larger batches go to cuBLAS
void matvec(const float* x, int64_t ldx, int64_t n, const MatOut* outs, int n_outs, cudaStream_t s);
// Whether many-row products decode weights of type t to halves (all but F32, multiplied as f32).
bool gemm_in_halves(GgmlType t);
void dequant_half(const DMat& w, __half* out, cudaStream_t s);  // [rows][cols] halves
// y[m][n] = x[m][k] w[n][k]^T + beta y (row-major); cuBLAS runs on the handle's stream.
void gemm_half(cublasHandle_t h, const __half* w, int64_t n, const __half* x, int64_t ldx, int64_t m, int64_t k, float* y,
               int64_t ldy, float beta);
// The same with f32 weights (row stride ldw floats) and f32 input.
void gemm_f32(cublasHandle_t h, const float* w, int64_t ldw, int64_t n, const float* x, int64_t ldx, int64_t m, int64_t k,
              float* y, int64_t ldy, float beta);

// Routed experts (moe.cu). One layer's experts, as device pointers.
struct ExpertDev {
  const uint8_t *gate = nullptr, *up = nullptr, *down = nullptr;
  const float *gate_bias = nullptr, *up_bias = nullptr, *down_bias = nullptr;
};
struct MoeDev {
  const ExpertDev* table = nullptr;  // [n_expert]
  GgmlType gate_type = GgmlType::F32, down_type = GgmlType::F32;
  int64_t gate_stride = 0, down_stride = 0;  // gate and up share type and stride
  int64_t n_embd = 0, n_ff = 0, n_expert = 0, k = 0;
  Activation act = Activation::SwiGLU;
};
// experts/weights: [n][k], best rank first, under the family's contract (moe/router.cpp); at most
// 256 experts and 8 chosen (a clear error otherwise).
void route(const float* logits, const float* bias, int64_t n, int64_t n_expert, int64_t k, RouterContract c,
           int32_t* experts, float* weights, cudaStream_t s);
// Few tokens: each (token, rank) pair reads its expert's rows (matvec.cu): act [n*k][n_ff] f32,
// then slots [n*k][n_embd] (with the down bias), which combine_ranked sums. Pairs whose expert has
// no weights in m.table are skipped (another wave's). With route.logits, the gate/up products route
// the tokens themselves (as route() would) and write experts and weights for the later steps; all
// experts must then be in the table.
struct RouteHere {
  const float* logits = nullptr;  // [n][n_expert]
  const float* bias = nullptr;
  RouterContract contract = RouterContract::SoftmaxTopKRenorm;
  int32_t* experts = nullptr;  // [n*k]
  float* weights = nullptr;
};
void moe_gate_up_mv(const float* x, int64_t n, const int32_t* experts, const MoeDev& m, float* act, cudaStream_t s,
                    const RouteHere& route = {});
void moe_down_mv(const float* act, int64_t n, const int32_t* experts, const MoeDev& m, float* slots, cudaStream_t s);
// Many tokens: the (token, rank) pairs sorted by expert (on the host). The used experts' weights as
// halves (gate_up: [n_used][2 n_ff][n_embd], down: [n_used][n_embd][n_ff]); after the gate/up GEMM
// (h: [pairs][2 n_ff] f32), sorted_glu gives act [pairs][n_ff] halves; after the down GEMM (down:
// [pairs][n_embd]), sorted_down_bias adds the down biases and sorted_combine sums each token's
// ranks in order. Pairs whose expert has no weights in m.table are left alone (another wave's).
void dequant_experts(const MoeDev& m, const int32_t* used, int64_t n_used, __half* gate_up, __half* down, cudaStream_t s);
// Or, with no host round trip and no halves of the weights written (expert_gemm.cu): the pairs
// sorted on the device (sorted: tok, pair_expert, sorted_of_slot as [3][n*k]; count_first: each
// expert's pair count then its first sorted pair, [2][n_expert]); the sorted pairs of the experts
// with weights in m.table cut into tiles of at most 64 pairs of one expert (n_tiles of at most
// max_expert_tiles); then h = x W^T straight from the quantized weights for gate/up (x: the pairs'
// inputs [pairs][n_embd] halves; h as above) or down (x: act, y: down as above).
struct ExpertTile {
  int32_t expert, pair0, pairs;
};
void sort_pairs(const int32_t* experts, int64_t n, int64_t k, int64_t n_expert, int32_t* sorted, int32_t* count_first,
                cudaStream_t s);
int64_t max_expert_tiles(int64_t pairs, int64_t n_expert);
void expert_tiles(const MoeDev& m, const int32_t* count_first, ExpertTile* tiles, int32_t* n_tiles, cudaStream_t s);
void expert_gemm(const MoeDev& m, bool down, const ExpertTile* tiles, const int32_t* n_tiles, int64_t max_tiles, const __half* x,
                 float* y, cudaStream_t s);
void sorted_glu(const float* h, const int32_t* pair_expert, int64_t pairs, const MoeDev& m, __half* act, cudaStream_t s);
void sorted_down_bias(float* down, const int32_t* pair_expert, int64_t pairs, const MoeDev& m, cudaStream_t s);
void sorted_combine(const float* down, const int32_t* sorted_of_slot, const float* weights, int64_t n, int64_t k,
                    int64_t n_embd, bool accumulate, float* out, cudaStream_t s);

// Weights: a matrix from the file's layout into the backend's (weight_layout.h), on the device.
void repack(GgmlType t, const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride, int64_t rows,
            int64_t cols, cudaStream_t s);

}  // namespace ts::gpu
