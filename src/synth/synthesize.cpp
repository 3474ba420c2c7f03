// The streaming loop of `synth`: validate everything, write the header, then per tensor generate and
// quantize row blocks on the pool into one buffer while a helper thread writes the other.
#include "synth/synthesize.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "gguf/gguf_writer.h"
#include "quant/kernels.h"
#include "synth/synth_metadata.h"
#include "synth/synth_tensors.h"
#include "synth/weight_rng.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/progress.h"

namespace ts::synth {
namespace {

// One task generates about this many elements (1 MiB of floats): big enough to amortize the pool's
// hand-off, small enough that every thread's scratch stays in cache.
constexpr uint64_t kTaskElems = uint64_t{1} << 18;
constexpr int kTasksPerThread = 8;  // per batch: keeps every thread busy between two writes

// Two buffers: one being filled by the pool while the other is written on a helper thread.
class DoubleBufferedSink {
 public:
  explicit DoubleBufferedSink(GgufWriter& w) : w_(w) {}
  ~DoubleBufferedSink() {
    if (pending_.valid()) pending_.wait();
  }
  std::vector<uint8_t>& next() { return bufs_[which_]; }
  void submit() {
    drain();
    std::vector<uint8_t>* buf = &bufs_[which_];
    pending_ = std::async(std::launch::async, [this, buf] { w_.write(buf->data(), buf->size()); });
    which_ ^= 1;
  }
  void drain() {
    if (pending_.valid()) pending_.get();  // rethrows a write error
  }

 private:
  GgufWriter& w_;
  std::vector<uint8_t> bufs_[2];
  int which_ = 0;
  std::future<void> pending_;
};

}  // namespace

void generate(uint64_t seed, const std::string& tensor, float mean, float stddev, uint64_t first, int64_t n, float* dst) {
  const uint64_t key = tensor_key(seed, tensor);
  for (int64_t i = 0; i < n; ++i) dst[i] = mean + stddev * unit_normal(key, first + static_cast<uint64_t>(i));
}

SynthResult synthesize(const SynthConfig& config, const std::string& out, ThreadPool& pool, const SynthOptions& opt) {
  SynthConfig c = config;
  std::unique_ptr<GgufFile> vocab;
  if (!c.vocab_from.empty()) {
    vocab = GgufFile::open(c.vocab_from);
    c.vocab = vocab_size_of(*vocab);
  }
  validate(c);
  const std::vector<TensorSpec> tensors = plan_tensors(c);
  const OutputOptions out_opt{.keep_existing = opt.force ? nullptr : "(pass --force to replace it)"};
  check_output_path(out, out_opt);

  const auto start = std::chrono::steady_clock::now();
  InterruptGuard interrupt;
  GgufWriter w(out, 32, out_opt);
  write_metadata(w, c, tensors, vocab.get());
  for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.dims);
  w.begin_data();
  const uint64_t total = w.written_bytes() + w.data_bytes();
  std::unique_ptr<Progress> progress;
  if (opt.progress) progress = std::make_unique<Progress>("synth", total);

  DoubleBufferedSink sink(w);
  uint64_t submitted = w.written_bytes();
  for (const auto& t : tensors) {
    const uint64_t row = t.dims[0], rows = t.n_elements() / row, rb = row_bytes(t.type, row);
    const uint64_t task_rows = std::max<uint64_t>(1, kTaskElems / row);
    const uint64_t batch_rows = task_rows * kTasksPerThread * static_cast<uint64_t>(pool.size());
    for (uint64_t r0 = 0; r0 < rows; r0 += batch_rows) {
      interrupt.check();
      const uint64_t n_rows = std::min(batch_rows, rows - r0);
      std::vector<uint8_t>& buf = sink.next();
      buf.resize(n_rows * rb);
      const int64_t n_tasks = static_cast<int64_t>((n_rows + task_rows - 1) / task_rows);
      pool.parallel_for(n_tasks, [&](int64_t k) {
        const uint64_t first = static_cast<uint64_t>(k) * task_rows;
        const uint64_t cnt = std::min(task_rows, n_rows - first);
        const int64_t n = static_cast<int64_t>(cnt * row);
        std::vector<float> scratch(static_cast<size_t>(n));
        generate(c.seed, t.name, t.mean, t.stddev, (r0 + first) * row, n, scratch.data());
        quant::quantize_weights(t.type, scratch.data(), buf.data() + first * rb, n);
      });
      sink.submit();
      submitted += buf.size();
      if (progress) progress->update(submitted);
    }
  }
  sink.drain();
  interrupt.check();
  w.finish();

  SynthResult r;
  r.bytes = w.written_bytes();
  r.tensors = tensors.size();
  if (progress) progress->finish();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace ts::synth
