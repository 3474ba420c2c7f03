// The small interface the forward pass is written against. A backend owns activation memory and
// runs the operations of the supported families; weights are handed to it once at load time. The
// forward pass (model/forward.cpp) calls only these operations, so a second backend (CUDA) is a
// new implementation of this class, not a second forward pass.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quant/types.h"

namespace ts {

// A weight matrix as the backend holds it: `rows` rows of `cols` elements, `row_stride` bytes apart.
struct Mat {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
  size_t row_stride = 0;
};

// An f32 activation tensor of n rows (tokens) by dim columns, in backend memory.
struct Act {
  float* data = nullptr;
  int64_t n = 0, dim = 0;
  float* row(int64_t i) const { return data + i * dim; }
  Act first(int64_t rows) const { return Act{data, rows, dim}; }  // a view of the first rows
  Act rows(int64_t begin, int64_t count) const { return Act{row(begin), count, dim}; }
};

// How one group of layers rotates q and k. The backend computes the rotation of each row from the
// step's positions (see Step), so per-call tables never travel from the host.
struct RopeParams {
  enum class Layout { AdjacentPairs, NeoX };  // (x[2i], x[2i+1]) vs (x[i], x[i + n_rot/2])
  Layout layout = Layout::AdjacentPairs;
  int64_t n_rot = 0;             // rotated dimensions (<= head_dim); the rest pass through
  double base = 10000.0;
  double linear_factor = 1.0;    // rope.scaling.type = linear: positions are divided by it
  // YaRN (gpt-oss): factor 0 means none. Frequencies between the beta_fast and beta_slow
  // correction dimensions blend interpolated and original rotation; cos/sin are scaled by
  // 0.1 * ln(factor) + 1.
  double yarn_factor = 0, yarn_orig_ctx = 0, yarn_beta_fast = 32, yarn_beta_slow = 1;
  // rope_freqs.weight (Llama 3.1): n_rot/2 divisors of the frequencies, in backend memory; or null.
  const float* freq_factors = nullptr;
  bool operator==(const RopeParams&) const = default;
};

// One layer's attention settings: what differs between the families' attention layers.
struct AttentionParams {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 1.0f;                 // applied to q·k
  int64_t window = 0;                 // > 0: a query at position p sees keys (p - window, p]
  const float* sinks = nullptr;       // per q-head logit added to the softmax denominator only
  // When set, q and k arrive unrotated and attention rotates them first (RoPE from each row's
  // position): a GPU backend then rotates, stores and attends in one pass.
  const RopeParams* rope = nullptr;
};

// One product of a shared input: y = x W^T (+ bias), or with `accumulate` y += x W^T (+ bias).
// The bias is added to the product before it is added to y, so the bytes are those of matmul,
// add_bias, add.
struct MatmulOut {
  const Mat* w = nullptr;
  Act y;
  const float* bias = nullptr;
  bool accumulate = false;
};

// An RMS norm applied to an operation's input as it is read (x / rms(x) * w over each whole row),
// so the normalised rows never make a round trip through memory. w null: no norm.
struct InputNorm {
  const float* w = nullptr;
  float eps = 0;
};

// One residual-stream edit (steering), applied to every row x of an activation. With d the
// direction, d^ = d / |d| and c = d^ . x for the row:
//   Add:    x += alpha * d                      (llama.cpp's control vectors)
//   Ablate: x -= alpha * c * d^                 (alpha = 1 removes the component along d)
//   Clamp:  x += (target - c) * d^              (sets the component to target)
//   Renorm: ablate, then rescale x to its norm before the edit
// A row with |c| < gate is left unchanged.
struct SteerParams {
  enum class Mode { Add, Ablate, Clamp, Renorm };
  Mode mode = Mode::Add;
  const float* direction = nullptr;  // x.dim values in backend memory
  double norm = 1;                   // |d|
  float alpha = 1, target = 0, gate = 0;
};

enum class Activation {
  SwiGLU,          // silu(gate) * up
  GeluTanhGLU,     // gelu_tanh(gate) * up (gemma)
  ClampedSwiGLU,   // gpt-oss: g = min(g, 7), u = clamp(u, -7, 7), g * sigmoid(1.702 g) * (u + 1)
};

// How a token's router logits choose its experts (moe/router.cpp is the definition; a backend that
// routes on its device follows it, ties to the lower expert index).
enum class RouterContract {
  SoftmaxTopKRenorm,   // Mixtral, Qwen3-MoE: softmax over all, top-k, renormalise the k weights
  BiasedTopKSoftmax,   // gpt-oss: add the bias, top-k on the biased logits, softmax over the k
};

// One routed expert's weights in backend memory, or (on_host) in pinned host memory in the
// backend's packed layout, for a backend that computes such experts on host threads
// (Backend::computes_on_host).
struct ExpertWeights {
  Mat gate, up, down;
  const float* gate_bias = nullptr;  // gpt-oss only
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  bool on_host = false;
};

// A whole MoE layer in one operation: route each row of x under `contract`, run the k chosen
// experts' FFNs, sum their outputs weighted, in router rank order. `experts` holds every expert of
// the layer, resident at addresses that stay valid for the backend's lifetime (a backend may keep
// its own table of them between calls).
struct RoutedExperts {
  int64_t layer = 0;  // names errors; one table per layer
  RouterContract contract = RouterContract::SoftmaxTopKRenorm;
  Activation activation = Activation::SwiGLU;
  int64_t k = 0;
  const Mat* router = nullptr;
  const float* router_bias = nullptr;
  std::span<const ExpertWeights> experts;
  bool accumulate = false;  // out += the weighted sum (out is the residual), not out = it
};

// A gated feed-forward block (a dense FFN or one routed expert):
// out = act(x Wg^T + bg, x Wu^T + bu) Wd^T + bd, biases optional.
struct FfnWeights {
  const Mat* gate = nullptr;
  const Mat* up = nullptr;
  const Mat* down = nullptr;
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  Activation act = Activation::SwiGLU;
};
struct FfnJob {
  Act x;
  FfnWeights w;
  Act out;
};

// A sequence's key/value cache, owned by the backend (which picks its element type and layout):
// every layer's K and V for n_ctx positions. Handles are freed with free_kv.
using KvHandle = int64_t;

// One sequence's share of a forward call: rows [row0, row0 + n) of every activation of the step
// belong to it, at positions pos0 .. pos0 + n - 1 of its KV cache.
struct SeqRows {
  KvHandle kv = -1;
  int64_t row0 = 0, n = 0, pos0 = 0;
};

// What one forward call computes: n_rows tokens of one or more sequences, rows of a sequence
// contiguous and in position order; out_rows lists the rows whose logits are wanted, ascending.
// The backend takes all of it in begin_step, once per call (a GPU backend uploads it once).
struct Step {
  const int32_t* ids = nullptr;  // [n_rows]
  int64_t n_rows = 0;
  const SeqRows* seqs = nullptr;
  int64_t n_seqs = 0;
  const int32_t* out_rows = nullptr;
  int64_t n_out = 0;
};

// Where a buffer lives. The CPU backend has only host memory (all three kinds are host memory there);
// a GPU backend keeps weights and activations in Device memory and stages host data through
// PinnedHost memory, which the device can copy from asynchronously.
enum class MemKind { Host, PinnedHost, Device };

// Work is issued to one of two queues: every operation goes to Compute; Transfer carries the work
// that should overlap compute (expert slots filled from pinned host memory, and experts read from
// files repacked into their slots). Events order them.
enum class Queue { Compute, Transfer };
using EventHandle = int64_t;

// Raw backend memory, e.g. the slots of an expert cache. Aligned to 4 KiB so that O_DIRECT reads
// can land in it directly.
struct Buffer {
  void* data = nullptr;
  size_t bytes = 0;
  MemKind kind = MemKind::Host;
};
inline constexpr size_t kBufferAlign = 4096;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual int threads() const = 0;
  // Tokens per prefill forward call when the user names none (--batch).
  virtual int64_t prefill_batch() const = 0;

  // Memory. Activations are reused between calls, so allocation is not on the hot path.
  virtual Act alloc(int64_t n, int64_t dim) = 0;
  virtual void release(Act& a) = 0;
  // A KV cache of n_layer layers, n_ctx positions of `width` values each for K and for V.
  virtual KvHandle alloc_kv(int64_t n_layer, int64_t n_ctx, int64_t width) = 0;
  virtual void free_kv(KvHandle kv) = 0;
  virtual size_t kv_bytes() const = 0;  // held by all live KV caches
  // Zero-filled, kBufferAlign-aligned memory of `kind`; a failure is a ts::Error stating the size.
  virtual Buffer alloc_buffer(size_t bytes, MemKind kind) = 0;
  virtual void free_buffer(Buffer& b) = 0;
  // Weights: `upload` makes a matrix usable by the backend (the CPU backend uses mapped bytes in
  // place); `upload_f32` copies a small f32 vector (norm weights, biases, sinks).
  virtual Mat upload(const Mat& host) = 0;
  virtual const float* upload_f32(const std::vector<float>& v) = 0;
  // Where upload() puts weights. Host: the backend computes from host memory, so expert stores may
  // hand out views of any host memory (mapped files, read slots). Device: the backend reads only its
  // own memory, so routed experts must be uploaded too (residency/stores.h, make_device_experts).
  virtual MemKind weight_memory() const { return MemKind::Host; }
  // The backend's weight layout, written on the host: pack writes `host` into `dst` (packed_bytes
  // long, any host memory) so that those bytes, copied into backend memory (copy_async), are a
  // matrix the backend computes with, as upload() would make it. A slot cache in device memory is
  // fed this way from pinned host memory. The CPU computes from the file's layout (a plain copy).
  virtual size_t packed_bytes(const Mat& host) const { return static_cast<size_t>(host.rows) * host.row_stride; }
  virtual Mat pack(const Mat& host, void* dst) const;
  // The same on the backend, in order with queue q's work: `src`, in the file's layout, already lies
  // in the backend's memory (a file's bytes copied in as read) and `dst` is backend memory. A slot
  // cache fed from files repacks there, not on the thread that read the expert. Backends that
  // compute from host memory pack on the host.
  virtual void pack_async(const Mat& src, void* dst, Queue) { pack(src, dst); }

  // Asynchronous work. copy_async copies between memory of any kinds, in order with the other work
  // of queue q (host memory that is not PinnedHost may make it synchronous). An event marks the
  // work issued to a queue so far: wait_event makes a queue's later work start after it,
  // host_wait blocks the caller until it completed. synchronize waits for both queues.
  virtual void copy_async(void* dst, const void* src, size_t bytes, Queue q) = 0;
  virtual EventHandle create_event() = 0;
  virtual void destroy_event(EventHandle e) = 0;
  virtual void record_event(EventHandle e, Queue q) = 0;
  virtual void wait_event(Queue q, EventHandle e) = 0;
  virtual void host_wait(EventHandle e) = 0;
  virtual void synchronize() = 0;

  // Recording. A step's operations that depend only on its key (its shape: rows per sequence, the
  // wanted rows) and on device-side inputs may be recorded once and replayed (CUDA graphs). The
  // forward pass calls replay(key) after begin_step: true means the recorded operations were
  // issued and it must not issue them again; otherwise it may wrap them in begin_recording(key) /
  // end_recording(). Backends that cannot record return false and ignore the other two.
  virtual bool replay(uint64_t key) { return false; }
  virtual void begin_recording(uint64_t key) {}
  virtual void end_recording() {}

  // Starts a forward call: takes the step's ids, positions and sequences (the arrays may be reused
  // by the caller once this returns). The operations below refer to the current step.
  virtual void begin_step(const Step& s) = 0;
  // Whether a row's results are the same bytes whatever else its step holds. Where they are not (a
  // GPU's products on the tensor cores depend on how many rows share them), a row still gets the
  // bytes it gets alone in a step whose sequences each bring one row (decode steps, however many
  // sequences share them) and in a step of its own sequence's rows, chunked as they would be alone;
  // the server's scheduler keeps to those two kinds of step on such a backend.
  virtual bool rows_independent() const { return true; }

  // Operations. Shapes are checked by the caller; rows of `x` are tokens.
  virtual void embed(const Mat& table, Act out) = 0;                                   // rows of the step's ids
  virtual void rms_norm(Act x, const float* w, float eps, int64_t group, Act out) = 0;  // per `group` elements
  virtual void matmul(const Mat& w, Act x, Act y) = 0;                                 // y = x W^T
  // Several products of one input (q, k, v; gate, up): the input is normalised (if asked) and
  // prepared once; each output may add a bias and accumulate into y (MatmulOut).
  virtual void matmul_shared(Act x, std::span<const MatmulOut> outs, const InputNorm& norm = {}) = 0;
  // The whole gated FFN: the activation is applied as gate and up rows are produced (and, on the
  // CPU, quantized for the down projection there), so the intermediate never makes a separate pass.
  virtual void ffn(Act x, const FfnWeights& w, Act out, const InputNorm& norm = {}) = 0;
  // Several FFNs at once (a step's routed experts): each job's out = ffn(x, w), the same bytes as one
  // call each. False, with nothing done, where the backend has nothing better than those calls.
  virtual bool ffn_many(std::span<const FfnJob>) { return false; }
  virtual void add_bias(Act y, const float* b) = 0;
  virtual void add(Act dst, Act src) = 0;                                              // dst += src
  virtual void scale(Act x, float s) = 0;                                              // x *= s
  // Rotates each row's q and k by the row's position (when p.rope is set), writes each row's k and v
  // into its sequence's cache (layer `layer`) at that position, then attends each row's q over its
  // own sequence's cache up to that position. q and k may be modified.
  virtual void attention(int64_t layer, Act q, Act k, Act v, const AttentionParams& p, Act out) = 0;
  virtual void glu(Activation a, Act gate, Act up, Act out) = 0;
  // Routed experts: the tokens sent to one expert are gathered, computed together, and their outputs
  // scattered to per-(token, rank) slots; then each token's slots are summed in rank order, so the
  // result cannot depend on the order in which experts were computed or where they lived.
  virtual void gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) = 0;   // dst.row(i) = src.row(rows[i])
  virtual void scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) = 0;  // dst.row(rows[i]) = src.row(i)
  // out.row(t) = sum over r in [0, k) of weights[t*k + r] * slots.row(t*k + r), r ascending.
  virtual void combine_ranked(Act slots, const float* weights, int64_t k, Act out) = 0;
  // The whole routed-expert layer (see RoutedExperts), out = MoE(x), with no host synchronization.
  // Returns false when the backend does not offer it: the caller (moe/MoeLayer) then runs its loop
  // of the operations above, which defines the result. The CPU backend returns false.
  virtual bool routed_experts(const RoutedExperts& op, Act x, Act out) { return false; }
  // The same layer in three steps, for experts that move between calls (a slot cache), so the host
  // can plan the slots between them: route_experts routes x on the device and copies each (token,
  // rank)'s expert to `experts` on the host ([x.n * k], the one host round trip); run_experts computes
  // the (token, rank) pairs whose expert has weights in op.experts (entries with null gate data are
  // left for a later call, once their slots are filled); combine_experts sums every pair in rank
  // order into out. The bytes are routed_experts' however the pairs are split between calls. Only
  // where offers_routed_experts(); op.experts may change between the calls.
  // An entry of op.experts may be on_host when computes_on_host() said yes for it: its pairs are
  // then computed by host threads, with the same bytes.
  virtual void route_experts(const RoutedExperts& op, Act x, int32_t* experts);
  virtual void run_experts(const RoutedExperts& op, Act x);
  virtual void combine_experts(const RoutedExperts& op, Act x, Act out);
  // Whether routed_experts can ever return true: the MoE layer gathers a layer's expert table (one
  // request of every expert through the store) only for a backend that may take it.
  virtual bool offers_routed_experts() const { return false; }
  // Whether run_experts can compute an expert of this format from pinned host memory on host
  // threads, for a call of `tokens` rows, giving the bytes its device would.
  virtual bool computes_on_host(const ExpertWeights& w, Activation act, int64_t tokens) const { return false; }
  virtual void steer(Act x, const SteerParams& p) = 0;
  // out.row(i) = x.row(out_rows[first + i]) for i < out.n, over the step's out_rows (x and out
  // must not overlap).
  virtual void select_output_rows(Act x, int64_t first, Act out) = 0;
  // Makes an activation's values visible to the host (a no-op on the CPU).
  virtual void to_host(Act a, float* dst) = 0;
};

// How the CPU backend multiplies quantized weights with activations (docs/ARCHITECTURE.md, "Matmul
// precision"). Every mode gives the same bytes for any thread count and batch size.
enum class Precision {
  Int16,  // activations rounded to int16 per block of 32 (1/65534 of the block maximum), exact integer
          // dots: far closer to exact than llama.cpp, its decode as fast as int8's
  Exact,  // weights decoded to f32 times exact f32 activations: only the weights' own rounding is left
  Int8,   // the CLI's and server's default: the same with 8-bit codes (1/254 of the block maximum,
          // llama.cpp's rounding, float scales) in the FFNs and experts, int16 elsewhere: prefill
          // faster where AVX-512 VNNI multiplies four bytes per lane, and still closer to exact than
          // llama.cpp
};
// "int16", "exact" or "int8"; anything else is a ts::Error.
Precision parse_precision(const std::string& name);
// The element type of the CPU backend's KV caches: f32, or f16 (half the memory and the bytes read
// per decode step at depth; each K and V value rounded once). The exact precision needs f32.
enum class KvType { F32, F16 };
KvType parse_kv_type(const std::string& name);  // "f32" or "f16"
std::unique_ptr<Backend> make_cpu_backend(int n_threads, Precision precision = Precision::Int16,
                                          KvType kv_type = KvType::F32);

// The backend for --device: "cpu", "cuda" or "auto" (CUDA when this build has it and a device is
// present, else CPU); precision and kv_type configure the CPU backend (the CUDA backend has its own
// numerics: docs/CUDA.md). Anything else, or "cuda" without a usable device, is a ts::Error saying why.
std::unique_ptr<Backend> make_backend(const std::string& device, int cpu_threads, Precision precision = Precision::Int16,
                                      KvType kv_type = KvType::F32);
// Whether this build has the CUDA backend and a device can be used; `why` says why not.
bool cuda_available(std::string* why = nullptr);

}  // namespace ts
