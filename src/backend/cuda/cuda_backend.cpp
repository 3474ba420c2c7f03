#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "backend/cuda/blas.h"
#include "backend/cuda/check.h"
#include "backend/cuda/host_experts.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/weight_layout.h"
#include "util/error.h"

namespace ts {
namespace {

using gpu::DMat;
using gpu::dmat;

// A prompt step's experts multiply straight from their quantized weights (expert_gemm.cu) while the
// used experts have at most this many pairs each on average (two tiles); with more, decoding each
// expert to halves once for cuBLAS's faster GEMMs pays. The 20b on an H100 (2026-12-07, docs/CUDA.md):
// 512 rows +60%, 1024 +15% (128 pairs per expert), 2048 -14% fused against decoded.
constexpr int64_t kFusedPairsPerExpert = 128;

// Device memory that only grows (scratch for one kind of intermediate). Outgrown blocks are kept
// until the backend goes: a recorded step may still refer to them.
class Scratch {
 public:
  template <class T>
  T* get(int64_t count) {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T);
    if (bytes > bytes_) {
      void* p = nullptr;
      TS_CUDA(cudaMalloc(&p, bytes));
      blocks_.push_back(p);
      ptr_ = p;
      bytes_ = bytes;
    }
    return static_cast<T*>(ptr_);
  }
  ~Scratch() {
    for (void* p : blocks_) cudaFree(p);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  std::vector<void*> blocks_;
};

// Pinned host memory that only grows, for staging small uploads.
class PinnedScratch {
 public:
  template <class T>
  T* get(int64_t count) {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T);
    if (bytes > bytes_) {
      if (ptr_) TS_CUDA(cudaFreeHost(ptr_));
      TS_CUDA(cudaMallocHost(&ptr_, bytes));
      bytes_ = bytes;
    }
    return static_cast<T*>(ptr_);
  }
  ~PinnedScratch() {
    if (ptr_) cudaFreeHost(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int host_threads) : host_threads_(host_threads) {
    TS_CUDA(cudaSetDevice(0));
    TS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TS_CUDA(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    TS_CUDA(cudaEventCreateWithFlags(&step_uploaded_, cudaEventDisableTiming));
    if (gpu::blas().create(&blas_) != CUBLAS_STATUS_SUCCESS) fail("cuBLAS could not be initialised");
    if (gpu::blas().set_stream(blas_, stream_) != CUBLAS_STATUS_SUCCESS) fail("cuBLAS could not be bound to the stream");
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    cudaStreamSynchronize(copy_stream_);
    for (auto& [k, g] : graphs_) cudaGraphExecDestroy(g);
    for (void* p : owned_) cudaFree(p);
    for (auto& [h, kv] : kv_) cudaFree(kv.data);
    for (auto& [h, e] : events_) cudaEventDestroy(e);
    for (auto& [l, t] : tables_) cudaFree(t.dev);
    for (Staged& st : staged_)
      if (st.copied) cudaEventDestroy(st.copied);
    if (host_rows_copied_) cudaEventDestroy(host_rows_copied_);
    if (routing_copied_) cudaEventDestroy(routing_copied_);
    cudaFree(step_dev_buf_);
    gpu::blas().destroy(blas_);
    cudaEventDestroy(step_uploaded_);
    cudaStreamDestroy(copy_stream_);
    cudaStreamDestroy(stream_);
  }

  const char* name() const override { return "cuda"; }
  // A prompt step decodes each used expert's weights to halves once for all of its rows, and the
  // tensor cores want tall tiles: the 20b's pp2048 on an H100 ran at 7,548 tok/s in steps of 512
  // rows and 12,405-16,433 in one of 2048 (docs/CUDA.md).
  int64_t prefill_batch() const override { return 2048; }
  int threads() const override { return 1; }

  // --- memory ------------------------------------------------------------------------------------
  Act alloc(int64_t n, int64_t dim) override {
    float* p = nullptr;
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(n * dim, 1)) * sizeof(float);
    if (cudaMalloc(&p, bytes) != cudaSuccess) fail("out of device memory allocating {} x {} activations", n, dim);
    TS_CUDA(cudaMemset(p, 0, bytes));
    return Act{p, n, dim};
  }
  void release(Act& a) override {
    if (!a.data) return;
    // A recorded step may read or write these activations. Its key names its Forward by the
    // Forward's first buffer, and a later Forward may get that address back with its other buffers
    // elsewhere: recorded steps go with any buffer freed, never replaying into freed memory.
    forget_recorded_steps();
    TS_CUDA(cudaFree(a.data));
    a = Act{};
  }
  KvHandle alloc_kv(int64_t n_layer, int64_t n_ctx, int64_t width) override {
    KvSeq s{nullptr, n_layer, n_ctx, width};
    const size_t bytes = s.bytes();
    if (cudaMalloc(&s.data, bytes) != cudaSuccess)
      fail("out of device memory allocating a KV cache of {} positions ({} MiB; reduce --ctx)", n_ctx, bytes >> 20);
    TS_CUDA(cudaMemset(s.data, 0, bytes));
    const KvHandle h = next_kv_++;
    kv_.emplace(h, s);
    return h;
  }
  void free_kv(KvHandle kv) override {
    auto it = kv_.find(kv);
    if (it == kv_.end()) return;
    TS_CUDA(cudaStreamSynchronize(stream_));
    TS_CUDA(cudaFree(it->second.data));
    kv_.erase(it);
  }
  size_t kv_bytes() const override {
    size_t total = 0;
    for (const auto& [h, s] : kv_) total += s.bytes();
    return total;
  }
  Buffer alloc_buffer(size_t bytes, MemKind kind) override {
    const size_t rounded = std::max(kBufferAlign, (bytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign);
    void* p = nullptr;
    switch (kind) {
      case MemKind::Device: {
        void* raw = nullptr;
        if (cudaMalloc(&raw, rounded + kBufferAlign) != cudaSuccess) fail("out of device memory allocating a {}-byte buffer", bytes);
        p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + kBufferAlign - 1) / kBufferAlign * kBufferAlign);
        device_raw_[p] = raw;
        TS_CUDA(cudaMemset(p, 0, rounded));
        break;
      }
      case MemKind::PinnedHost:
        if (cudaHostAlloc(&p, rounded, cudaHostAllocDefault) != cudaSuccess) fail("cannot pin a {}-byte host buffer", bytes);
        std::memset(p, 0, rounded);
        break;
      case MemKind::Host:
        p = std::aligned_alloc(kBufferAlign, rounded);
        if (!p) fail("out of memory allocating a {}-byte buffer", bytes);
        std::memset(p, 0, rounded);
        break;
    }
    return Buffer{p, bytes, kind};
  }
  void free_buffer(Buffer& b) override {
    if (!b.data) return;
    switch (b.kind) {
      case MemKind::Device: {
        forget_recorded_steps();  // as for release(Act&)
        TS_CUDA(cudaStreamSynchronize(stream_));
        auto it = device_raw_.find(b.data);
        if (it != device_raw_.end()) {
          TS_CUDA(cudaFree(it->second));
          device_raw_.erase(it);
        }
        break;
      }
      case MemKind::PinnedHost: TS_CUDA(cudaFreeHost(b.data)); break;
      case MemKind::Host: std::free(b.data); break;
    }
    b = Buffer{};
  }

  // Weights arrive in the file's layout; they are copied in pieces through pinned memory and
  // repacked on the device (weight_layout.h).
  static void check_weights(const Mat& host) {
    if (host.cols % 32 != 0)
      fail("the CUDA backend needs weight rows of a multiple of 32 values; a {} tensor has rows of {}", type_name(host.type),
           host.cols);
    if (!type_info(host.type).supported) fail("the CUDA backend cannot compute with {} weights", type_name(host.type));
  }
  Mat upload(const Mat& host) override {
    check_weights(host);
    const gpu::RowLayout L = gpu::row_layout(host.type, host.cols);
    uint8_t* dst = nullptr;
    const size_t bytes = static_cast<size_t>(host.rows) * L.stride;
    if (cudaMalloc(&dst, bytes) != cudaSuccess)
      fail("out of device memory uploading a {} x {} {} matrix ({} MiB)", host.rows, host.cols, type_name(host.type), bytes >> 20);
    owned_.push_back(dst);
    const size_t src_row = host.row_stride;
    const int64_t rows_per_piece = std::max<int64_t>(1, static_cast<int64_t>((64u << 20) / src_row));
    uint8_t* stage = staging_.get<uint8_t>(rows_per_piece * src_row);
    uint8_t* native = native_.get<uint8_t>(rows_per_piece * src_row);
    for (int64_t r0 = 0; r0 < host.rows; r0 += rows_per_piece) {
      const int64_t n = std::min(rows_per_piece, host.rows - r0);
      std::memcpy(stage, static_cast<const uint8_t*>(host.data) + r0 * src_row, n * src_row);
      TS_CUDA(cudaMemcpyAsync(native, stage, n * src_row, cudaMemcpyHostToDevice, stream_));
      gpu::repack(host.type, native, src_row, dst + r0 * L.stride, L.stride, n, host.cols, stream_);
      TS_CUDA(cudaStreamSynchronize(stream_));  // the pinned piece is refilled next
    }
    return Mat{host.type, dst, host.rows, host.cols, L.stride};
  }
  MemKind weight_memory() const override { return MemKind::Device; }
  size_t packed_bytes(const Mat& host) const override {
    return static_cast<size_t>(host.rows) * gpu::row_layout(host.type, host.cols).stride;
  }
  Mat pack(const Mat& host, void* dst) const override {
    check_weights(host);
    const gpu::RowLayout L = gpu::row_layout(host.type, host.cols);
    for (int64_t r = 0; r < host.rows; ++r)
      gpu::repack_row(host.type, static_cast<const uint8_t*>(host.data) + r * host.row_stride,
                      static_cast<uint8_t*>(dst) + r * L.stride, host.cols);
    return Mat{host.type, dst, host.rows, host.cols, L.stride};
  }
  void pack_async(const Mat& src, void* dst, Queue q) override {
    check_weights(src);
    gpu::repack(src.type, static_cast<const uint8_t*>(src.data), static_cast<int64_t>(src.row_stride), static_cast<uint8_t*>(dst),
                gpu::row_layout(src.type, src.cols).stride, src.rows, src.cols, stream_of(q));
  }
  const float* upload_f32(const std::vector<float>& v) override {
    float* p = nullptr;
    TS_CUDA(cudaMalloc(&p, std::max<size_t>(v.size(), 1) * sizeof(float)));
    owned_.push_back(p);
    TS_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    return p;
  }

  // --- asynchronous work -------------------------------------------------------------------------
  void copy_async(void* dst, const void* src, size_t bytes, Queue q) override {
    TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(q)));
  }
  EventHandle create_event() override {
    cudaEvent_t e;
    TS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_[next_event_] = e;
    return next_event_++;
  }
  void destroy_event(EventHandle e) override {
    auto it = events_.find(e);
    if (it == events_.end()) return;
    TS_CUDA(cudaEventDestroy(it->second));
    events_.erase(it);
  }
  void record_event(EventHandle e, Queue q) override { TS_CUDA(cudaEventRecord(event(e), stream_of(q))); }
  void wait_event(Queue q, EventHandle e) override { TS_CUDA(cudaStreamWaitEvent(stream_of(q), event(e), 0)); }
  void host_wait(EventHandle e) override { TS_CUDA(cudaEventSynchronize(event(e))); }
  void synchronize() override {
    TS_CUDA(cudaStreamSynchronize(stream_));
    TS_CUDA(cudaStreamSynchronize(copy_stream_));
  }

  // --- the step ----------------------------------------------------------------------------------
  void begin_step(const Step& st) override {
    // The pinned copy of the previous step's inputs may still be on its way to the device.
    TS_CUDA(cudaEventSynchronize(step_uploaded_));
    const int64_t n = st.n_rows, ns = st.n_seqs, no = st.n_out;
    // One block: seqs first (8-byte aligned), then ids, positions, sequence of each row, out rows.
    const size_t seq_bytes = static_cast<size_t>(ns) * sizeof(gpu::DevSeq);
    const size_t bytes = seq_bytes + static_cast<size_t>(3 * n + no) * sizeof(int32_t);
    if (bytes > step_dev_bytes_) {
      forget_recorded_steps();  // they point into the old block
      TS_CUDA(cudaStreamSynchronize(stream_));
      TS_CUDA(cudaFree(step_dev_buf_));
      step_dev_bytes_ = std::max(bytes, size_t{4096});
      TS_CUDA(cudaMalloc(&step_dev_buf_, step_dev_bytes_));
    }
    uint8_t* host = step_host_.get<uint8_t>(static_cast<int64_t>(step_dev_bytes_));
    auto* seqs = reinterpret_cast<gpu::DevSeq*>(host);
    auto* ints = reinterpret_cast<int32_t*>(host + seq_bytes);
    int32_t max_rows = 0;
    for (int64_t s = 0; s < ns; ++s) {
      const SeqRows& q = st.seqs[s];
      auto it = kv_.find(q.kv);
      if (it == kv_.end()) fail("internal error: step names an unknown KV cache {}", q.kv);
      seqs[s] = gpu::DevSeq{it->second.data, it->second.n_ctx, static_cast<int32_t>(q.row0), static_cast<int32_t>(q.n),
                            static_cast<int32_t>(q.pos0), 0};
      max_rows = std::max(max_rows, static_cast<int32_t>(q.n));
      for (int64_t i = 0; i < q.n; ++i) {
        ints[n + q.row0 + i] = static_cast<int32_t>(q.pos0 + i);
        ints[2 * n + q.row0 + i] = static_cast<int32_t>(s);
      }
    }
    std::copy(st.ids, st.ids + n, ints);
    std::copy(st.out_rows, st.out_rows + no, ints + 3 * n);
    TS_CUDA(cudaMemcpyAsync(step_dev_buf_, host, bytes, cudaMemcpyHostToDevice, stream_));
    TS_CUDA(cudaEventRecord(step_uploaded_, stream_));
    auto* dev = static_cast<uint8_t*>(step_dev_buf_);
    auto* dints = reinterpret_cast<const int32_t*>(dev + seq_bytes);
    step_ = gpu::StepDev{dints, dints + n, dints + 2 * n, reinterpret_cast<const gpu::DevSeq*>(dev), dints + 3 * n,
                         static_cast<int32_t>(n), static_cast<int32_t>(ns), static_cast<int32_t>(no), max_rows};
    rope_tables_.clear();
  }

  // Rows computed by the exact products (matvecs of up to kMatvecMaxRows rows at a time, the routed
  // experts one (token, rank) pair at a time): those of a step of few rows, or of one whose sequences
  // each bring one row (decode, however many sequences share it). Their sums are each row's own, so
  // such a row gets the bytes it gets alone; the tensor cores' products over more rows do not
  // (rows_independent).
  bool exact_rows(int64_t n) const { return n <= gpu::kMatvecMaxRows || step_.max_seq_rows == 1; }
  bool rows_independent() const override { return false; }

  // Steps of exact rows (they use no cuBLAS and no host round trip) are recorded the second time
  // their key is seen: the first run has grown every scratch buffer the key needs, so nothing is
  // allocated while recording.
  bool replay(uint64_t key) override {
    if (!exact_rows(step_.n_rows)) return false;
    auto it = graphs_.find(key);
    if (it == graphs_.end()) return false;
    TS_CUDA(cudaGraphLaunch(it->second, stream_));
    return true;
  }
  void begin_recording(uint64_t key) override {
    recording_ = exact_rows(step_.n_rows) && !seen_.insert(key).second;
    recording_key_ = key;
    if (recording_) TS_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }
  // Drops every recorded step, after the stream has finished any replay in flight; the next steps
  // of each shape run unrecorded once (sizing any scratch they need) and are recorded again.
  void forget_recorded_steps() {
    if (graphs_.empty() && seen_.empty()) return;
    TS_CUDA(cudaStreamSynchronize(stream_));
    for (auto& [k, g] : graphs_) TS_CUDA(cudaGraphExecDestroy(g));
    graphs_.clear();
    seen_.clear();
  }
  void end_recording() override {
    if (!recording_) return;
    recording_ = false;
    cudaGraph_t graph = nullptr;
    TS_CUDA(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    TS_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    TS_CUDA(cudaGraphDestroy(graph));
    graphs_[recording_key_] = exec;
    TS_CUDA(cudaGraphLaunch(exec, stream_));
  }

  // --- operations --------------------------------------------------------------------------------
  void embed(const Mat& table, Act out) override { gpu::embed(dmat(table), step_, out.data, out.n, stream_); }
  void rms_norm(Act x, const float* w, float eps, int64_t group, Act out) override {
    gpu::rms_norm(x.data, w, eps, group, out.data, x.n, x.dim, stream_);
  }
  void matmul(const Mat& w, Act x, Act y) override {
    const MatmulOut o{&w, y};
    matmul_shared(x, std::span(&o, 1));
  }
  void matmul_shared(Act x, std::span<const MatmulOut> outs, const InputNorm& norm = {}) override {
    if (norm.w) {
      const Act h{normed_.get<float>(x.n * x.dim), x.n, x.dim};
      gpu::rms_norm(x.data, norm.w, norm.eps, x.dim, h.data, x.n, x.dim, stream_);
      x = h;
    }
    // Outputs of one weight type and width go together (a K-quant file mixes types across q/k/v).
    std::vector<bool> done(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      if (done[i]) continue;
      std::vector<gpu::MatOut> group;
      for (size_t j = i; j < outs.size(); ++j)
        if (!done[j] && outs[j].w->type == outs[i].w->type && outs[j].w->cols == outs[i].w->cols &&
            static_cast<int>(group.size()) < gpu::kMaxOuts) {
          done[j] = true;
          const MatmulOut& o = outs[j];
          group.push_back(gpu::MatOut{dmat(*o.w), o.y.data, o.y.dim, o.bias, o.accumulate});
        }
      products(x, group);
    }
  }
  // The gated FFN as its operations: gate and up (with their biases) from one read of the input,
  // the activation, then the down projection with its bias.
  void ffn(Act x, const FfnWeights& w, Act out, const InputNorm& norm = {}) override {
    const int64_t n = x.n, ff = w.gate->rows;
    const Act g{ffn_gate_.get<float>(n * ff), n, ff}, u{ffn_up_.get<float>(n * ff), n, ff}, a{ffn_act_.get<float>(n * ff), n, ff};
    const MatmulOut gate_up[] = {{w.gate, g, w.gate_bias}, {w.up, u, w.up_bias}};
    matmul_shared(x, gate_up, norm);
    glu(w.act, g, u, a);
    const MatmulOut down{w.down, out, w.down_bias};
    matmul_shared(a, std::span(&down, 1));
  }
  void add_bias(Act y, const float* b) override { gpu::add_bias(y.data, b, y.n, y.dim, stream_); }
  void add(Act dst, Act src) override { gpu::add(dst.data, src.data, dst.n * dst.dim, stream_); }
  void scale(Act x, float s) override { gpu::scale(x.data, s, x.n * x.dim, stream_); }
  void attention(int64_t layer, Act q, Act k, Act v, const AttentionParams& p, Act out) override {
    float* scratch = attn_scratch_.get<float>(gpu::attention_scratch_floats(p, step_));
    gpu::attention(q.data, k.data, v.data, layer, p, step_, rope_angles(p), scratch, out.data, stream_);
  }
  void glu(Activation a, Act gate, Act up, Act out) override {
    gpu::glu(a, gate.data, up.data, out.data, gate.n * gate.dim, gate.dim, stream_);
  }
  void gather_rows(Act src, const int32_t* rows, int64_t n, Act dst) override {
    gpu::copy_rows(src.data, dst.data, upload_ints(rows, n), n, src.dim, false, stream_);
  }
  void scatter_rows(Act src, const int32_t* rows, int64_t n, Act dst) override {
    gpu::copy_rows(src.data, dst.data, upload_ints(rows, n), n, src.dim, true, stream_);
  }
  void combine_ranked(Act slots, const float* weights, int64_t k, Act out) override {
    float* w = weights_dev_.get<float>(out.n * k);
    TS_CUDA(cudaMemcpyAsync(w, weights, out.n * k * sizeof(float), cudaMemcpyHostToDevice, stream_));
    gpu::combine_ranked(slots.data, w, out.n, k, out.dim, false, out.data, stream_);
  }
  bool routed_experts(const RoutedExperts& op, Act x, Act out) override;
  bool offers_routed_experts() const override { return true; }
  bool computes_on_host(const ExpertWeights& w, Activation act, int64_t tokens) const override {
    return tokens <= gpu::kMatvecMaxRows && gpu::HostExperts::supports(w, act);
  }
  void route_experts(const RoutedExperts& op, Act x, int32_t* experts) override;
  void run_experts(const RoutedExperts& op, Act x) override;
  void combine_experts(const RoutedExperts& op, Act x, Act out) override;
  void steer(Act x, const SteerParams& p) override { gpu::steer(x.data, x.n, x.dim, p, stream_); }
  void select_output_rows(Act x, int64_t first, Act out) override {
    gpu::select_rows(x.data, x.dim, step_, first, out.data, out.n, stream_);
  }
  // Through pinned memory: into pageable memory the driver stages the copy itself, in pieces (a
  // decode step's 201,088 logits took 113-123 us of a 3.2 ms step on an H200's host; through the
  // pinned buffer the 20b's tg128 went from 313 to 329 tok/s).
  void to_host(Act a, float* dst) override {
    const size_t bytes = static_cast<size_t>(a.n * a.dim) * sizeof(float);
    float* pinned = host_out_.get<float>(a.n * a.dim);
    TS_CUDA(cudaMemcpyAsync(pinned, a.data, bytes, cudaMemcpyDeviceToHost, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
    std::memcpy(dst, pinned, bytes);
  }

 private:
  struct KvSeq {
    __half* data;
    int64_t n_layer, n_ctx, width;
    size_t bytes() const { return static_cast<size_t>(n_layer) * 2 * n_ctx * width * sizeof(__half); }
  };
  struct Table {
    std::vector<ExpertWeights> host;  // what `dev` was built from
    gpu::ExpertDev* dev = nullptr;
  };

  cudaStream_t stream_of(Queue q) const { return q == Queue::Compute ? stream_ : copy_stream_; }
  cudaEvent_t event(EventHandle e) const {
    auto it = events_.find(e);
    if (it == events_.end()) fail("internal error: unknown event {}", e);
    return it->second;
  }
  // The step's rotation angles for these RopeParams (equal in value across a model's layers, or of
  // two kinds), computed by the first layer that needs them. Slots are kept in order of first use;
  // past kRopeTables - 1 distinct ones, the last slot is recomputed at each use.
  const float* rope_angles(const AttentionParams& p) {
    if (!p.rope) return nullptr;
    constexpr size_t kRopeTables = 4;
    const int64_t per = static_cast<int64_t>(step_.n_rows) * gpu::kRopeRowFloats;
    float* base = rope_scratch_.get<float>(static_cast<int64_t>(kRopeTables) * per);
    const auto it = std::find(rope_tables_.begin(), rope_tables_.end(), *p.rope);
    if (it != rope_tables_.end()) return base + (it - rope_tables_.begin()) * per;
    float* t = base + static_cast<int64_t>(std::min(rope_tables_.size(), kRopeTables - 1)) * per;
    if (rope_tables_.size() < kRopeTables - 1) rope_tables_.push_back(*p.rope);
    gpu::rope_angles(*p.rope, step_, t, stream_);
    return t;
  }

  const int32_t* upload_ints(const int32_t* v, int64_t n) {
    int32_t* d = index_dev_.get<int32_t>(n);
    TS_CUDA(cudaMemcpyAsync(d, v, n * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    return d;
  }

  // y = x W^T for outputs sharing the input: exact matvecs for exact rows (kMatvecMaxRows at a time,
  // each row's sums the same in any group); else cuBLAS, with f32 weights as they are, other weights
  // decoded to halves and the input converted to halves once.
  void products(Act x, const std::vector<gpu::MatOut>& outs) {
    const GgmlType t = outs[0].w.type;
    if (exact_rows(x.n)) {
      gpu::MatOut group[gpu::kMaxOuts];  // matmul_shared groups at most kMaxOuts outputs
      for (int64_t t0 = 0; t0 < x.n; t0 += gpu::kMatvecMaxRows) {
        for (size_t j = 0; j < outs.size(); ++j) {
          group[j] = outs[j];
          group[j].y = outs[j].y + t0 * outs[j].ldy;
        }
        gpu::matvec(x.data + t0 * x.dim, x.dim, std::min(gpu::kMatvecMaxRows, x.n - t0), group, static_cast<int>(outs.size()), stream_);
      }
      return;
    }
    if (!gpu::gemm_in_halves(t)) {
      for (const gpu::MatOut& o : outs) {
        gpu::gemm_f32(blas_, reinterpret_cast<const float*>(o.w.data), o.w.stride / static_cast<int64_t>(sizeof(float)), o.w.rows,
                      x.data, x.dim, x.n, x.dim, o.y, o.ldy, o.accumulate ? 1.0f : 0.0f);
        if (o.bias) gpu::add_bias(o.y, o.bias, x.n, o.ldy, stream_);
      }
      return;
    }
    // Plain 16-bit weights keep the input's rounding remainder as a second pass (hi + lo), so their
    // products are as exact as the weights; quantized weights carry a coarser rounding already.
    const bool split = t == GgmlType::F16 || t == GgmlType::BF16;
    const int64_t K = x.dim;
    __half* hi = half_a_.get<__half>(x.n * K);
    __half* lo = split ? half_a_lo_.get<__half>(x.n * K) : nullptr;
    gpu::to_half(x.data, x.dim, nullptr, x.n, K, hi, lo, stream_);
    for (const gpu::MatOut& o : outs) {
      __half* w = half_w_.get<__half>(o.w.rows * K);
      gpu::dequant_half(o.w, w, stream_);
      gpu::gemm_half(blas_, w, o.w.rows, hi, K, x.n, K, o.y, o.ldy, o.accumulate ? 1.0f : 0.0f);
      if (split) gpu::gemm_half(blas_, w, o.w.rows, lo, K, x.n, K, o.y, o.ldy, 1.0f);
      if (o.bias) gpu::add_bias(o.y, o.bias, x.n, o.ldy, stream_);
    }
  }

  // The routed-experts call in progress (route_experts .. combine_experts).
  struct MoeCall {
    int64_t n = 0, k = 0;
    int32_t* experts = nullptr;  // [n*k] on the device, best rank first
    float* weights = nullptr;
    const int32_t* host_experts = nullptr;  // pinned copy, once read back
    int32_t* host_experts_queued = nullptr;  // the copy queued, not yet waited for
    const float* host_x = nullptr;          // route_experts, few tokens: x in pinned memory
    bool gemm = false;    // many tokens: expert GEMMs over the pairs sorted by expert
    bool sorted = false;  // gemm: the sort below and the input halves are ready
    std::vector<int64_t> count, first;  // per expert: its pairs, where they start in sorted order
    std::vector<int32_t> used;          // experts with pairs, ascending
    int32_t* sorted_dev = nullptr;      // tok, pair_expert, sorted_of_slot: [3][n*k]
    int32_t* count_first = nullptr;     // sorted on the device: per expert its pairs, then its first
    __half* x_half = nullptr;           // [n*k][n_embd] the pairs' inputs in sorted order
    float* out_rows = nullptr;          // matvec: slots [n*k][n_embd]; gemm: down [n*k][n_embd] sorted
    gpu::RouteHere route_here;          // logits set: routed by the gate/up products, not yet
  };
  const gpu::ExpertDev* expert_table(const RoutedExperts& op);
  gpu::MoeDev moe_dev(const RoutedExperts& op, Act x);
  // The router's product, then the routing: by route(), or (in_gate_up) left to the gate/up products.
  void start_routing(const RoutedExperts& op, Act x, bool in_gate_up);
  void sort_pairs(const gpu::MoeDev& m, Act x);
  // The routing read back into pinned memory: the copy queued once (queue_routing_copy), then
  // waited for (routing_on_host).
  void queue_routing_copy();
  const int32_t* routing_on_host();
  // run_experts' two halves: the pairs of experts with device weights, and those of op's on_host
  // experts, computed by host threads into the call's slots.
  void run_on_device(const RoutedExperts& op, Act x);
  void run_on_host(const RoutedExperts& op, Act x);
  // Small host arrays uploaded on the compute queue through a ring of pinned buffers, each reused
  // only after its copy completed (for tables and lists that change within one step).
  void* upload_staged(const void* src, size_t bytes);

  cudaStream_t stream_ = nullptr, copy_stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<void*> owned_;  // weights and uploaded vectors
  std::map<void*, void*> device_raw_;  // aligned device buffers -> their allocation
  std::map<KvHandle, KvSeq> kv_;
  KvHandle next_kv_ = 0;
  std::map<EventHandle, cudaEvent_t> events_;
  EventHandle next_event_ = 0;
  // The step: a device block of its inputs and its pinned staging.
  void* step_dev_buf_ = nullptr;
  size_t step_dev_bytes_ = 0;
  PinnedScratch step_host_;
  PinnedScratch host_out_;  // to_host's landing place
  cudaEvent_t step_uploaded_ = nullptr;
  gpu::StepDev step_;
  // Recorded steps by key.
  std::map<uint64_t, cudaGraphExec_t> graphs_;
  std::set<uint64_t> seen_;
  bool recording_ = false;
  uint64_t recording_key_ = 0;
  // Scratch.
  PinnedScratch staging_;
  Scratch rope_scratch_;
  std::vector<RopeParams> rope_tables_;  // this step's, in rope_scratch_'s slots
  Scratch native_, attn_scratch_, half_a_, half_a_lo_, half_w_, index_dev_, weights_dev_;
  Scratch normed_, ffn_gate_, ffn_up_, ffn_act_;
  Scratch moe_logits_, moe_experts_, moe_weights_, moe_act_, moe_slots_;
  Scratch moe_sorted_, moe_ha_, moe_h_, moe_hact_, moe_down_, moe_gu_w_, moe_down_w_;
  PinnedScratch moe_host_experts_, moe_host_sorted_;
  cudaEvent_t routing_copied_ = nullptr;
  Scratch moe_count_first_, moe_tiles_, moe_n_tiles_;
  // Experts computed on host threads: x read back with the routing, their slots' rows uploaded
  // from host_rows_ (reused once host_rows_copied_ has passed).
  int host_threads_;
  std::unique_ptr<gpu::HostExperts> host_experts_;
  PinnedScratch host_x_, host_rows_;
  cudaEvent_t host_rows_copied_ = nullptr;
  std::vector<gpu::HostExperts::Job> host_jobs_;
  std::vector<int64_t> host_pairs_;
  std::vector<ExpertWeights> device_experts_;
  std::map<int64_t, Table> tables_;
  MoeCall call_;
  struct Staged {
    PinnedScratch host;
    Scratch dev;
    cudaEvent_t copied = nullptr;
  };
  std::vector<Staged> staged_ = std::vector<Staged>(32);
  size_t staged_next_ = 0;
};

void* CudaBackend::upload_staged(const void* src, size_t bytes) {
  Staged& st = staged_[staged_next_++ % staged_.size()];
  if (!st.copied) TS_CUDA(cudaEventCreateWithFlags(&st.copied, cudaEventDisableTiming));
  else TS_CUDA(cudaEventSynchronize(st.copied));  // its previous copy has read the pinned buffer
  uint8_t* h = st.host.get<uint8_t>(static_cast<int64_t>(bytes));
  uint8_t* d = st.dev.get<uint8_t>(static_cast<int64_t>(bytes));
  std::memcpy(h, src, bytes);
  TS_CUDA(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream_));
  TS_CUDA(cudaEventRecord(st.copied, stream_));
  return d;
}

const gpu::ExpertDev* CudaBackend::expert_table(const RoutedExperts& op) {
  Table& t = tables_[op.layer];
  const bool same = t.host.size() == op.experts.size() &&
                    std::equal(t.host.begin(), t.host.end(), op.experts.begin(), [](const ExpertWeights& a, const ExpertWeights& b) {
                      return a.gate.data == b.gate.data && a.up.data == b.up.data && a.down.data == b.down.data &&
                             a.gate_bias == b.gate_bias && a.up_bias == b.up_bias && a.down_bias == b.down_bias;
                    });
  if (same) return t.dev;
  std::vector<gpu::ExpertDev> dev;
  for (const ExpertWeights& e : op.experts)
    dev.push_back(gpu::ExpertDev{static_cast<const uint8_t*>(e.gate.data), static_cast<const uint8_t*>(e.up.data),
                                 static_cast<const uint8_t*>(e.down.data), e.gate_bias, e.up_bias, e.down_bias});
  // A layer's first table stays on the device (resident experts hand the same one every call, so a
  // recorded step can use it); tables of experts that move go through the staging ring.
  if (t.dev) return static_cast<const gpu::ExpertDev*>(upload_staged(dev.data(), dev.size() * sizeof(gpu::ExpertDev)));
  TS_CUDA(cudaMalloc(&t.dev, dev.size() * sizeof(gpu::ExpertDev)));
  TS_CUDA(cudaMemcpy(t.dev, dev.data(), dev.size() * sizeof(gpu::ExpertDev), cudaMemcpyHostToDevice));
  t.host.assign(op.experts.begin(), op.experts.end());
  return t.dev;
}

// The layer's experts as the kernels see them, from the first expert with weights in the table
// (entries with no gate data are not part of this call's wave).
gpu::MoeDev CudaBackend::moe_dev(const RoutedExperts& op, Act x) {
  const ExpertWeights* e0 = nullptr;
  for (const ExpertWeights& e : op.experts)
    if (e.gate.data) {
      e0 = &e;
      break;
    }
  if (!e0) fail("internal error: layer {}: routed experts called with no expert weights", op.layer);
  gpu::MoeDev m;
  m.table = expert_table(op);
  m.gate_type = e0->gate.type;
  m.down_type = e0->down.type;
  m.gate_stride = static_cast<int64_t>(e0->gate.row_stride);
  m.down_stride = static_cast<int64_t>(e0->down.row_stride);
  m.n_embd = x.dim;
  m.n_ff = e0->gate.rows;
  m.n_expert = static_cast<int64_t>(op.experts.size());
  m.k = op.k;
  m.act = op.activation;
  return m;
}

bool CudaBackend::routed_experts(const RoutedExperts& op, Act x, Act out) {
  const ExpertWeights& e0 = op.experts[0];
  for (const ExpertWeights& e : op.experts)
    if (e.gate.type != e0.gate.type || e.up.type != e0.gate.type || e.down.type != e0.down.type ||
        e.gate.row_stride != e0.gate.row_stride || e.up.row_stride != e0.gate.row_stride || e.down.row_stride != e0.down.row_stride)
      return false;  // mixed expert formats: the layer loop handles them
  // Few tokens: the gate/up products route their own tokens (one launch fewer per layer).
  start_routing(op, x, x.n <= gpu::kMatvecMaxRows);
  run_experts(op, x);
  combine_experts(op, x, out);
  return true;
}

void CudaBackend::start_routing(const RoutedExperts& op, Act x, bool in_gate_up) {
  const int64_t n = x.n, k = op.k, P = n * k, n_expert = op.router->rows;
  call_ = MoeCall{};
  call_.n = n;
  call_.k = k;
  call_.experts = moe_experts_.get<int32_t>(P);
  call_.weights = moe_weights_.get<float>(P);
  float* logits = moe_logits_.get<float>(n * n_expert);
  const MatmulOut r{op.router, Act{logits, n, n_expert}};
  matmul_shared(x, std::span(&r, 1));
  if (in_gate_up) call_.route_here = gpu::RouteHere{logits, op.router_bias, op.contract, call_.experts, call_.weights};
  else gpu::route(logits, op.router_bias, n, n_expert, k, op.contract, call_.experts, call_.weights, stream_);
}

void CudaBackend::route_experts(const RoutedExperts& op, Act x, int32_t* experts) {
  start_routing(op, x, false);
  const int64_t P = x.n * op.k;
  if (!experts) return;
  int32_t* hx = moe_host_experts_.get<int32_t>(P);
  TS_CUDA(cudaMemcpyAsync(hx, call_.experts, P * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  if (x.n <= gpu::kMatvecMaxRows) {  // for experts the host may compute (run_on_host)
    float* h = host_x_.get<float>(x.n * x.dim);
    TS_CUDA(cudaMemcpyAsync(h, x.data, x.n * x.dim * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    call_.host_x = h;
  }
  TS_CUDA(cudaStreamSynchronize(stream_));
  std::memcpy(experts, hx, P * sizeof(int32_t));
  call_.host_experts = hx;
}

void CudaBackend::queue_routing_copy() {
  if (call_.host_experts || call_.host_experts_queued) return;
  const int64_t P = call_.n * call_.k;
  int32_t* hx = moe_host_experts_.get<int32_t>(P);
  TS_CUDA(cudaMemcpyAsync(hx, call_.experts, P * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  if (!routing_copied_) TS_CUDA(cudaEventCreateWithFlags(&routing_copied_, cudaEventDisableTiming));
  TS_CUDA(cudaEventRecord(routing_copied_, stream_));
  call_.host_experts_queued = hx;
}

const int32_t* CudaBackend::routing_on_host() {
  if (!call_.host_experts) {
    queue_routing_copy();
    TS_CUDA(cudaEventSynchronize(routing_copied_));
    call_.host_experts = call_.host_experts_queued;
  }
  return call_.host_experts;
}

// Many tokens per expert: the (token, rank) pairs sorted by expert on the host (one round trip per
// layer, a prefill-only cost), so each used expert is one GEMM over its rows; the pairs' inputs as
// halves.
void CudaBackend::sort_pairs(const gpu::MoeDev& m, Act x) {
  const int64_t k = call_.k, P = call_.n * k;
  const int32_t* hx = routing_on_host();
  call_.count.assign(m.n_expert, 0);
  call_.first.assign(m.n_expert, 0);
  for (int64_t i = 0; i < P; ++i) ++call_.count[hx[i]];
  // Staged arrays: token of each sorted pair, expert of each sorted pair, sorted index of each slot.
  int32_t* hs = moe_host_sorted_.get<int32_t>(3 * P);
  int32_t *tok = hs, *pair_expert = hs + P, *sorted_of_slot = hs + 2 * P;
  std::vector<int64_t> offset(m.n_expert, 0);
  for (int64_t e = 0, o = 0; e < m.n_expert; ++e) {
    call_.first[e] = offset[e] = o;
    o += call_.count[e];
    if (call_.count[e] > 0) call_.used.push_back(static_cast<int32_t>(e));
  }
  for (int64_t i = 0; i < P; ++i) {  // (token, rank) order: each expert's rows ascend by token
    const int64_t pos = offset[hx[i]]++;
    tok[pos] = static_cast<int32_t>(i / k);
    pair_expert[pos] = hx[i];
    sorted_of_slot[i] = static_cast<int32_t>(pos);
  }
  call_.sorted_dev = moe_sorted_.get<int32_t>(3 * P);
  TS_CUDA(cudaMemcpyAsync(call_.sorted_dev, hs, 3 * P * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  call_.x_half = moe_ha_.get<__half>(P * m.n_embd);
  gpu::to_half(x.data, x.dim, call_.sorted_dev, P, m.n_embd, call_.x_half, nullptr, stream_);
  call_.out_rows = moe_down_.get<float>(P * m.n_embd);
  call_.sorted = true;
}

void CudaBackend::run_experts(const RoutedExperts& op_in, Act x) {
  // Experts on the host: the device's products skip their pairs (no weights in its table), and
  // host threads compute them after the device's work is queued, so both run at once.
  const bool any_host = std::any_of(op_in.experts.begin(), op_in.experts.end(), [](const ExpertWeights& e) { return e.on_host; });
  RoutedExperts op = op_in;
  if (any_host) {
    device_experts_.assign(op_in.experts.begin(), op_in.experts.end());
    for (ExpertWeights& e : device_experts_)
      if (e.on_host) e = ExpertWeights{};
    op.experts = device_experts_;
    const bool any_device = std::any_of(device_experts_.begin(), device_experts_.end(), [](const ExpertWeights& e) { return e.gate.data; });
    if (!any_device) {
      run_on_host(op_in, x);
      return;
    }
  }
  run_on_device(op, x);
  if (any_host) run_on_host(op_in, x);
}

void CudaBackend::run_on_device(const RoutedExperts& op, Act x) {
  const gpu::MoeDev m = moe_dev(op, x);
  const int64_t n = call_.n, P = n * call_.k;
  for (const ExpertWeights& e : op.experts)
    if (e.gate.data && (e.gate.type != m.gate_type || e.up.type != m.gate_type || e.down.type != m.down_type ||
                        static_cast<int64_t>(e.gate.row_stride) != m.gate_stride ||
                        static_cast<int64_t>(e.up.row_stride) != m.gate_stride ||
                        static_cast<int64_t>(e.down.row_stride) != m.down_stride))
      fail("internal error: layer {}: routed experts of mixed formats", op.layer);
  call_.gemm = !exact_rows(n) && gpu::gemm_in_halves(m.gate_type) && gpu::gemm_in_halves(m.down_type);
  if (!call_.gemm) {
    // Few tokens: every (token, rank) pair reads its expert's rows (pairs of other waves skip).
    float* act = moe_act_.get<float>(P * m.n_ff);
    call_.out_rows = moe_slots_.get<float>(P * m.n_embd);
    gpu::moe_gate_up_mv(x.data, n, call_.experts, m, act, stream_, call_.route_here);
    gpu::moe_down_mv(act, n, call_.experts, m, call_.out_rows, stream_);
    return;
  }
  if (P <= kFusedPairsPerExpert * m.n_expert) {
    // Few pairs per expert: sorted on the device and multiplied from the quantized weights, with no
    // host round trip and no decoded copy of the weights.
    if (!call_.sorted) {
      call_.sorted_dev = moe_sorted_.get<int32_t>(3 * P);
      call_.count_first = moe_count_first_.get<int32_t>(2 * m.n_expert);
      gpu::sort_pairs(call_.experts, n, call_.k, m.n_expert, call_.sorted_dev, call_.count_first, stream_);
      call_.x_half = moe_ha_.get<__half>(P * m.n_embd);
      gpu::to_half(x.data, x.dim, call_.sorted_dev, P, m.n_embd, call_.x_half, nullptr, stream_);
      call_.out_rows = moe_down_.get<float>(P * m.n_embd);
      call_.sorted = true;
    }
    const int64_t max_tiles = gpu::max_expert_tiles(P, m.n_expert);
    auto* tiles = moe_tiles_.get<gpu::ExpertTile>(max_tiles);
    auto* n_tiles = moe_n_tiles_.get<int32_t>(1);
    gpu::expert_tiles(m, call_.count_first, tiles, n_tiles, stream_);
    float* h = moe_h_.get<float>(P * 2 * m.n_ff);
    gpu::expert_gemm(m, false, tiles, n_tiles, max_tiles, call_.x_half, h, stream_);
    const int32_t* pair_expert = call_.sorted_dev + P;
    __half* act = moe_hact_.get<__half>(P * m.n_ff);
    gpu::sorted_glu(h, pair_expert, P, m, act, stream_);
    gpu::expert_gemm(m, true, tiles, n_tiles, max_tiles, act, call_.out_rows, stream_);
    gpu::sorted_down_bias(call_.out_rows, pair_expert, P, m, stream_);
    return;
  }
  // Many: this wave's experts, decoded to halves. Every expert when all have their weights on the
  // device and the routing is not on the host yet (a step with this many pairs uses nearly every
  // expert anyway): queued before the host waits for the routing, so the device decodes while the
  // host sorts the pairs and queues the GEMMs, which was the device's idle time. Otherwise the used
  // ones whose weights are in the table, once sorted.
  std::vector<int32_t> wave;
  __half *gu_w = nullptr, *down_w = nullptr;
  auto decode = [&] {
    const int64_t n_wave = static_cast<int64_t>(wave.size());
    const auto* wave_dev = static_cast<const int32_t*>(upload_staged(wave.data(), wave.size() * sizeof(int32_t)));
    gu_w = moe_gu_w_.get<__half>(n_wave * 2 * m.n_ff * m.n_embd);
    down_w = moe_down_w_.get<__half>(n_wave * m.n_embd * m.n_ff);
    gpu::dequant_experts(m, wave_dev, n_wave, gu_w, down_w, stream_);
  };
  const bool every_expert = !call_.sorted && !call_.host_experts &&
                            std::all_of(op.experts.begin(), op.experts.end(), [](const ExpertWeights& e) { return e.gate.data; });
  if (every_expert) {
    queue_routing_copy();
    for (int32_t e = 0; e < static_cast<int32_t>(m.n_expert); ++e) wave.push_back(e);
    decode();
  }
  if (!call_.sorted) sort_pairs(m, x);
  if (!every_expert) {
    for (int32_t e : call_.used)
      if (op.experts[e].gate.data) wave.push_back(e);
    if (wave.empty()) return;
    decode();
  }
  const int64_t n_wave = static_cast<int64_t>(wave.size());
  float* h = moe_h_.get<float>(P * 2 * m.n_ff);
  for (int64_t u = 0; u < n_wave; ++u) {
    const int64_t e = wave[u], first = call_.first[e], count = call_.count[e];
    if (count == 0) continue;
    gpu::gemm_half(blas_, gu_w + u * 2 * m.n_ff * m.n_embd, 2 * m.n_ff, call_.x_half + first * m.n_embd, m.n_embd, count,
                   m.n_embd, h + first * 2 * m.n_ff, 2 * m.n_ff, 0.0f);
  }
  const int32_t* pair_expert = call_.sorted_dev + P;
  __half* act = moe_hact_.get<__half>(P * m.n_ff);
  gpu::sorted_glu(h, pair_expert, P, m, act, stream_);
  for (int64_t u = 0; u < n_wave; ++u) {
    const int64_t e = wave[u], first = call_.first[e], count = call_.count[e];
    if (count == 0) continue;
    gpu::gemm_half(blas_, down_w + u * m.n_embd * m.n_ff, m.n_embd, act + first * m.n_ff, m.n_ff, count, m.n_ff,
                   call_.out_rows + first * m.n_embd, m.n_embd, 0.0f);
  }
  gpu::sorted_down_bias(call_.out_rows, pair_expert, P, m, stream_);
}

void CudaBackend::run_on_host(const RoutedExperts& op, Act x) {
  const int64_t n = call_.n, k = call_.k, P = n * k, d = x.dim;
  if (!call_.host_x || !call_.host_experts || n > gpu::kMatvecMaxRows)
    fail("internal error: layer {}: experts on the host need the few-token routing of route_experts", op.layer);
  if (!call_.out_rows) call_.out_rows = moe_slots_.get<float>(P * d);
  if (!host_experts_) host_experts_ = std::make_unique<gpu::HostExperts>(host_threads_);
  if (!host_rows_copied_) TS_CUDA(cudaEventCreateWithFlags(&host_rows_copied_, cudaEventDisableTiming));
  else TS_CUDA(cudaEventSynchronize(host_rows_copied_));  // the last upload has left host_rows_
  float* rows = host_rows_.get<float>(P * d);
  host_jobs_.clear();
  host_pairs_.clear();
  for (int64_t i = 0; i < P; ++i) {
    const ExpertWeights& e = op.experts[call_.host_experts[i]];
    if (!e.on_host) continue;
    if (!computes_on_host(e, op.activation, n))
      fail("internal error: layer {}: expert {} cannot be computed on the host", op.layer, call_.host_experts[i]);
    host_jobs_.push_back(gpu::HostExperts::Job{&e, call_.host_x + i / k * d, rows + i * d});
    host_pairs_.push_back(i);
  }
  host_experts_->run(host_jobs_, op.activation);
  for (int64_t i : host_pairs_)
    TS_CUDA(cudaMemcpyAsync(call_.out_rows + i * d, rows + i * d, d * sizeof(float), cudaMemcpyHostToDevice, stream_));
  TS_CUDA(cudaEventRecord(host_rows_copied_, stream_));
}

void CudaBackend::combine_experts(const RoutedExperts& op, Act x, Act out) {
  if (!call_.out_rows) fail("internal error: layer {}: routed experts combined before they ran", op.layer);
  if (call_.gemm)
    gpu::sorted_combine(call_.out_rows, call_.sorted_dev + 2 * call_.n * call_.k, call_.weights, call_.n, call_.k, x.dim,
                        op.accumulate, out.data, stream_);
  else
    gpu::combine_ranked(call_.out_rows, call_.weights, call_.n, call_.k, x.dim, op.accumulate, out.data, stream_);
}

}  // namespace

bool cuda_device_usable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? fmt::format("no CUDA device ({})", cudaGetErrorString(e)) : "no CUDA device";
    return false;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    if (why) *why = "the CUDA device's properties cannot be read";
    return false;
  }
  if (p.major < 9) {
    if (why) *why = fmt::format("the CUDA backend is built for compute capability 9.0 (Hopper) or newer; '{}' is {}.{}", p.name, p.major, p.minor);
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(int host_threads) { return std::make_unique<CudaBackend>(host_threads); }

}  // namespace ts
