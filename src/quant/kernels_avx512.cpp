// The avx512 kernel table. AVX-512 F/BW/VL/DQ: 512-bit float kernels, and 32 registers for a 4x4 matmul tile.
#define TS_X86_VNNI 0
#define TS_X86_WIDE 1
#define TS_X86_TILE_R 4
#define TS_X86_TILE_T 4
#define TS_X86_NAME "avx512"
#define TS_X86_MAKE make_avx512_kernels
#include "quant/kernels_x86.h"
