// The prompt step's device sort of (token, rank) pairs by expert (expert_gemm.cu: each warp counts
// and places one chunk of the pairs) against the host's stable sort, at prompt-step sizes, with
// experts left empty and one expert taking most pairs: every pair in the same place, and the same
// counts and offsets. Skips without a CUDA device.
#include <gtest/gtest.h>

#ifdef TURBOSPARK_HAVE_CUDA
#include <random>
#include <vector>

#include "backend/cuda/kernels.h"
#include "cuda/require_cuda.h"

namespace ts {
namespace {

class DeviceInts {
 public:
  explicit DeviceInts(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&p_, n * sizeof(int32_t)), cudaSuccess); }
  ~DeviceInts() { cudaFree(p_); }
  DeviceInts(const DeviceInts&) = delete;
  DeviceInts& operator=(const DeviceInts&) = delete;
  int32_t* get() const { return p_; }
  std::vector<int32_t> read() const {
    std::vector<int32_t> v(n_);
    EXPECT_EQ(cudaMemcpy(v.data(), p_, n_ * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  int32_t* p_ = nullptr;
  size_t n_;
};

TEST(ExpertSort, TheDeviceSortIsTheHostsStableSort) {
  TS_REQUIRE_CUDA();
  struct Case {
    int64_t n, k, n_expert;
  };
  std::mt19937 rng(11);
  for (const Case c : {Case{2048, 4, 32}, Case{512, 8, 128}, Case{37, 4, 32}, Case{3001, 2, 256}, Case{1, 4, 8}}) {
    SCOPED_TRACE(testing::Message() << c.n << " tokens, k " << c.k << ", " << c.n_expert << " experts");
    const int64_t P = c.n * c.k;
    // Expert 1 takes about half of the pairs, every third expert none.
    std::vector<double> weight(c.n_expert);
    for (int64_t e = 0; e < c.n_expert; ++e) weight[e] = e % 3 == 2 ? 0.0 : 1.0;
    weight[1] = static_cast<double>(c.n_expert);
    std::discrete_distribution<int32_t> pick(weight.begin(), weight.end());
    std::vector<int32_t> experts(P);
    for (int32_t& e : experts) e = pick(rng);

    std::vector<int32_t> count(c.n_expert, 0), first(c.n_expert, 0), tok(P), pair_expert(P), sorted_of_slot(P);
    for (int32_t e : experts) ++count[e];
    std::vector<int32_t> next(c.n_expert);
    for (int64_t e = 0, o = 0; e < c.n_expert; o += count[e++]) first[e] = next[e] = static_cast<int32_t>(o);
    for (int64_t i = 0; i < P; ++i) {
      const int32_t pos = next[experts[i]]++;
      tok[pos] = static_cast<int32_t>(i / c.k);
      pair_expert[pos] = experts[i];
      sorted_of_slot[i] = pos;
    }

    DeviceInts d_experts(P), d_sorted(3 * P), d_count_first(2 * c.n_expert);
    ASSERT_EQ(cudaMemcpy(d_experts.get(), experts.data(), P * sizeof(int32_t), cudaMemcpyHostToDevice), cudaSuccess);
    gpu::sort_pairs(d_experts.get(), c.n, c.k, c.n_expert, d_sorted.get(), d_count_first.get(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<int32_t> sorted = d_sorted.read(), count_first = d_count_first.read();
    EXPECT_EQ(std::vector<int32_t>(sorted.begin(), sorted.begin() + P), tok);
    EXPECT_EQ(std::vector<int32_t>(sorted.begin() + P, sorted.begin() + 2 * P), pair_expert);
    EXPECT_EQ(std::vector<int32_t>(sorted.begin() + 2 * P, sorted.end()), sorted_of_slot);
    EXPECT_EQ(std::vector<int32_t>(count_first.begin(), count_first.begin() + c.n_expert), count);
    EXPECT_EQ(std::vector<int32_t>(count_first.begin() + c.n_expert, count_first.end()), first);
  }
}

}  // namespace
}  // namespace ts
#endif
