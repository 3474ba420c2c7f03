// Internal: one table of kernels per instruction set. The public functions in kernels.h use the table
// picked once from ts::cpu_features(); tests and benchmarks use kernels_for() to run every table the
// machine supports in one process (TURBOSPARK_ISA is read once per process, so it cannot do that).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ts::quant {

enum class Isa { scalar, avx2, avx512, avx512vnni };
inline constexpr std::array<Isa, 4> kAllIsas{Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512vnni};

// The matmul contract of kernels.h; a matvec is the call with n_tok = 1.
using MatmulFn = void (*)(const uint8_t* W, size_t row_stride, int64_t rows, int64_t k, const uint8_t* xq,
                          size_t xq_stride, int64_t n_tok, float* Y, size_t y_stride);
using DequantFn = void (*)(const uint8_t* src, float* dst, int64_t n);
// quantize_act16's contract for n_blocks blocks of 32 values: codes to q, scales to d, scaled sums to
// s, the codes' integer sums to sum.
// max_code: kAct16Max or kAct8Max.
using Act16Fn = void (*)(const float* x, int64_t n_blocks, int32_t max_code, int16_t* q, float* d, float* s, int32_t* sum);

inline constexpr size_t kMaxType = 40;  // ggml type ids are below this

struct KernelTable {
  const char* name = nullptr;
  std::array<MatmulFn, kMaxType> matmul{};    // null: the type has no dot kernel
  std::array<MatmulFn, kMaxType> matmul16{};  // int16 activations (kernels.h); null: none
  std::array<MatmulFn, kMaxType> matmul8{};   // the same with 8-bit codes (quantize_act8); null: matmul16
  std::array<DequantFn, kMaxType> dequant{};  // null: use dequantize_ref
  Act16Fn quantize16 = nullptr;               // null: the scalar definition (quantize_act16_ref)
};

// Whether this CPU and OS can run `isa` (ignoring the TURBOSPARK_ISA cap).
bool isa_supported(Isa isa);
// The table for `isa`; fails with ts::Error if the machine cannot run it.
const KernelTable& kernels_for(Isa isa);
// The table in use: the best one cpu_features() allows, picked at first use.
const KernelTable& active_kernels();
const char* isa_name(Isa isa);

// Per-ISA builders (defined in kernels_scalar.cpp and kernels_<isa>.cpp).
KernelTable make_scalar_kernels();
KernelTable make_avx2_kernels();
KernelTable make_avx512_kernels();
KernelTable make_avx512vnni_kernels();

inline size_t type_index(GgmlType t) { return static_cast<size_t>(t); }

}  // namespace ts::quant
