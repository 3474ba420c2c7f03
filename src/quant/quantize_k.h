// Internal: quantizers for one 256-value super-block of the K formats (used by quantize_weights).
#pragma once
#include <cstdint>

namespace ts::quant {

void quantize_q4_k_block(const float* x, uint8_t* dst);
void quantize_q5_k_block(const float* x, uint8_t* dst);
void quantize_q6_k_block(const float* x, uint8_t* dst);

}  // namespace ts::quant
