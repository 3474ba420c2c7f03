// Kernel dispatch: builds each ISA's table on first use and routes the public entry points of
// kernels.h to the table cpu_features() allows. Shape checks live here, once, so kernels may assume
// k is a whole number of blocks.
#include <cpuid.h>

#include "quant/kernel_table.h"
#include "quant/kernels.h"
#include "util/cpu_features.h"
#include "util/error.h"

namespace ts::quant {
namespace {

const KernelTable& table(Isa isa) {
  static const KernelTable tables[] = {make_scalar_kernels(), make_avx2_kernels(), make_avx512_kernels(),
                                       make_avx512vnni_kernels()};
  return tables[static_cast<int>(isa)];
}

MatmulFn matmul_fn(GgmlType w, int64_t k) {
  const TypeInfo& ti = type_info(w);
  const MatmulFn f = static_cast<size_t>(w) < kMaxType ? active_kernels().matmul[type_index(w)] : nullptr;
  if (!f) fail("no float-activation kernel for tensor type {}", ti.name);
  if (k <= 0 || k % ti.block_elems != 0) fail("row length {} is not a positive multiple of the {} block size", k, ti.name);
  return f;
}

}  // namespace

const char* isa_name(Isa isa) {
  static const char* const names[] = {"scalar", "avx2", "avx512", "avx512-vnni"};
  return names[static_cast<int>(isa)];
}

// F16C straight from CPUID: clang 14 (Debian's, used for the fuzz build) does not know the "f16c"
// feature string of __builtin_cpu_supports. The OS state it needs is AVX's, checked with avx2.
static bool has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

// __builtin_cpu_supports checks the OS-enabled register state (XCR0) as well as CPUID, like
// cpu_features(), but without the TURBOSPARK_ISA cap.
bool isa_supported(Isa isa) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return avx2;
    case Isa::avx512: return avx512;
    case Isa::avx512vnni: return avx512 && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

const KernelTable& kernels_for(Isa isa) {
  if (!isa_supported(isa)) fail("this CPU cannot run the {} kernels", isa_name(isa));
  return table(isa);
}

const KernelTable& active_kernels() {
  static const KernelTable& active = [] () -> const KernelTable& {
    const CpuFeatures& f = cpu_features();
    const Isa isa = f.avx512_vnni ? Isa::avx512vnni : f.avx512 ? Isa::avx512 : f.avx2 ? Isa::avx2 : Isa::scalar;
    return table(isa);
  }();
  return active;
}

void dequantize(GgmlType t, const void* src, float* dst, int64_t n) {
  const DequantFn f = static_cast<size_t>(t) < kMaxType ? active_kernels().dequant[type_index(t)] : nullptr;
  if (f) f(static_cast<const uint8_t*>(src), dst, n);
  else dequantize_ref(t, src, dst, n);
}

void matmul(GgmlType w, const void* W, size_t row_stride, int64_t rows, int64_t k, const void* xq, size_t xq_stride,
            int64_t n_tok, float* Y, size_t y_stride) {
  matmul_fn(w, k)(static_cast<const uint8_t*>(W), row_stride, rows, k, static_cast<const uint8_t*>(xq), xq_stride,
                  n_tok, Y, y_stride);
}

bool has_act16_kernel(GgmlType w) {
  return static_cast<size_t>(w) < kMaxType && active_kernels().matmul16[type_index(w)] != nullptr;
}

void matmul16(GgmlType w, const void* W, size_t row_stride, int64_t rows, int64_t k, const void* xq, size_t xq_stride,
              int64_t n_tok, float* Y, size_t y_stride, ActCodes codes) {
  const TypeInfo& ti = type_info(w);
  MatmulFn f = has_act16_kernel(w) ? active_kernels().matmul16[type_index(w)] : nullptr;
  if (f && codes == ActCodes::int8 && active_kernels().matmul8[type_index(w)]) f = active_kernels().matmul8[type_index(w)];
  if (!f) fail("no int16-activation kernel for tensor type {}", ti.name);
  if (k <= 0 || k % ti.block_elems != 0 || k % 32 != 0)
    fail("row length {} is not a positive multiple of the {} block size", k, ti.name);
  f(static_cast<const uint8_t*>(W), row_stride, rows, k, static_cast<const uint8_t*>(xq), xq_stride, n_tok, Y, y_stride);
}

const char* kernel_isa() { return active_kernels().name; }

}  // namespace ts::quant
