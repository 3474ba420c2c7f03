// Internal to the CPU backend: attention of one sequence's query rows over its KV cache.
//
// The fast path (attention_avx2.cpp) is flash-style: one pass over the keys in blocks of
// kAttnBlock positions with an online softmax, the keys of a long context split into chunks of
// kAttnChunk positions whose partial results are merged in chunk order. Blocks and chunks are
// aligned to absolute positions and every reduction has a fixed order, so a row's output depends
// only on its position, its query and the cache: the same bytes for any thread count, batch size or
// batch composition. The q heads of a GQA group are computed together, so each block of K and V is
// brought into L1 once per group.
#pragma once
#include <cstdint>

namespace ts::cpu {

inline constexpr int64_t kAttnBlock = 32;    // keys per online-softmax step (K and V blocks stay in L1)
inline constexpr int64_t kAttnChunk = 1024;  // keys per independently computed part of a long row

// One chunk's running softmax state of one (row, head): the max score m, the sum l of exp(score - m)
// and the unnormalised output (head_dim values), stored as [m, l, o...].
inline int64_t attn_state_floats(int64_t head_dim) { return head_dim + 2; }

// What the kernels need of one layer of one sequence.
struct AttnLayer {
  // f32 or f16, element e of key j of KV head h at [j * key_stride + h * head_stride + e], the
  // positions rounded up to whole blocks of kAttnBlock: the kernels read whole groups of 8 keys and
  // mask the positions past a row's own.
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t key_stride = 0, head_stride = 0;
  bool f16 = false;
  int64_t head_dim = 0, group = 0;  // q heads per kv head
  float scale = 1.0f;
  int64_t window = 0;               // > 0: keys (pos - window, pos]
};

// The first key a query at `pos` sees.
inline int64_t attn_first_key(const AttnLayer& L, int64_t pos) {
  return L.window > 0 && pos - L.window + 1 > 0 ? pos - L.window + 1 : 0;
}

// One query row of a task: its q vector (all heads), its position, and the states of the group's
// heads for the chunk being computed, one after another (null: the row sees no key of the chunk).
struct AttnRow {
  const float* q = nullptr;
  int64_t pos = 0;
  float* state = nullptr;
};

// The partial states of chunk `chunk` for the q heads kv_head * group .. + group - 1 of each row:
// blocks of keys outermost, so a block of K and V is read once for all rows and heads of the task.
void attend_chunk_avx2(const AttnLayer& L, const AttnRow* rows, int64_t n_rows, int64_t kv_head, int64_t chunk);

// Merges the states of a (row, head)'s chunks in order (n states, `stride` floats apart), with the
// head's sink logit if any, and writes the normalised output.
void attend_merge(const float* states, int64_t n, int64_t stride, const float* sink, int64_t head_dim, float* out);

// Stores n floats as f16 (round to nearest even), for the f16 KV cache.
void store_f16_avx2(const float* src, uint16_t* dst, int64_t n);

}  // namespace ts::cpu
