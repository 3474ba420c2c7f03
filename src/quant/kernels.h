// The numeric contract of every weight format: a scalar reference decoder (the definition), and the
// fast paths the backend calls (decode, activation quantization, dot products), picked at run time
// from the CPU's features. Fast paths must agree with the reference within the format's rounding;
// for a fixed machine they are deterministic: the same inputs give the same bits, whatever the
// thread count or the number of rows computed at once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace ts::quant {

// --- decoding --------------------------------------------------------------------------------
// n elements from the start of `src` (n a multiple of the block size). The reference is plain
// scalar C++ and is what the tests hold every other path to.
void dequantize_ref(GgmlType t, const void* src, float* dst, int64_t n);
void dequantize(GgmlType t, const void* src, float* dst, int64_t n);

// --- float weights ------------------------------------------------------------------------------
// Y[t * y_stride + r] = dot(row r of W, x_t) for the rows [0, rows) of a row-major F32, F16 or BF16
// weight matrix whose rows are `row_stride` bytes apart and k elements long, and n_tok f32 activation
// rows x_t at `x` (xs bytes apart). Every element is the same bit for bit whatever n_tok and the row
// range (one token is the decode case). Runs on the calling thread (callers split rows across
// threads) and is safe to call concurrently. Quantized weights take matmul16 below.
void matmul(GgmlType w, const void* W, size_t row_stride, int64_t rows, int64_t k,
            const void* x, size_t xs, int64_t n_tok, float* Y, size_t y_stride);

// --- int16 activations: the default path -----------------------------------------------------
// Activations rounded to int16 per block of 32 values (scale d = amax / 32767, so each value is off
// by at most d / 2: about 1/65534 of the block's largest value, against 1/254 for int8), multiplied
// with the weights' integer codes by exact integer dots. Every quantized weight type pairs with this
// one activation format, so an input shared by several matrices is quantized once.
//
// Numeric contract, identical on every kernel table, for any tile shape, thread split or token count
// (the scalar table is its definition; vector tables match it bit for bit). A weight row is a
// sequence of groups (32 values; 16 for Q6_K) with integer codes q, a factor D and, for Q4_1, Q5_1,
// Q4_K and Q5_K, an offset M (value = D * q + M for _1, D * q - M for _K). For output (row, token):
//   acc = accm = 0
//   for each group g in order, in activation block b:  S = sum q * xq  (exact in int32)
//       acc = fma(float(S), D * xd[b], acc);   accm = fma(M, xs[b], accm)   (if the format has M)
//   y = acc + accm (_1), acc - accm (_K), acc (others)
// where xd[b] and xs[b] = xd[b] * sum(xq of block b) come with the activation row.
//
// Row layout (act16_bytes(n) bytes, n a multiple of 32): int16 q[n], float d[n/32], float s[n/32],
// int32 sum[n/32] (sum(xq of block b), which kernels that decode weights with an offset take back).
//
// 8-bit codes (ActCodes::int8): the same layout and contract with d = amax / 127, so |q| <= 127:
// llama.cpp's activation rounding (with float scales), which the AVX-512 VNNI table multiplies up to
// 1.9x as fast in prefill (vpdpbusd, four values per lane). Products of such rows take the same kernels:
// the bytes do not depend on which kernel ran them.
enum class ActCodes { int16, int8 };
size_t act16_bytes(int64_t n);
void quantize_act16(const float* x, void* dst, int64_t n, ActCodes codes = ActCodes::int16);
// Block b (values 32b .. 32b + 31, from x32) of an activation row of n values at `row`: for a
// producer that finishes a row 32 values at a time.
void quantize_act16_block(const float* x32, void* row, int64_t n, int64_t b, ActCodes codes = ActCodes::int16);
// Whether `w` has int16-activation kernels (every quantized type with a dot kernel does; float
// weights are multiplied with f32 activations instead).
bool has_act16_kernel(GgmlType w);
// Y[t * y_stride + r] = row r of W times activation row t, on the calling thread as matmul() above.
// `codes`: how xq was quantized (int8 lets the table use its 8-bit kernels where it has them).
void matmul16(GgmlType w, const void* W, size_t row_stride, int64_t rows, int64_t k, const void* xq, size_t xq_stride,
              int64_t n_tok, float* Y, size_t y_stride, ActCodes codes = ActCodes::int16);

// --- weight quantization (for `turbospark synth` and tests) ------------------------------------
// n elements (a multiple of the block size) into `dst`. Supported: F32, F16, BF16, Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, MXFP4, Q4_K, Q5_K, Q6_K. Deterministic.
void quantize_weights(GgmlType t, const float* src, void* dst, int64_t n);
bool can_quantize_weights(GgmlType t);

// Name of the kernel set in use ("scalar", "avx2", "avx512", "avx512-vnni"), for logs and bench.
const char* kernel_isa();

}  // namespace ts::quant
