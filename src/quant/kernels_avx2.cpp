// The avx2 kernel table. AVX2 + FMA + F16C: 16 vector registers, so a 2x4 matmul tile.
#define TS_X86_VNNI 0
#define TS_X86_WIDE 0
#define TS_X86_TILE_R 2
#define TS_X86_TILE_T 4
#define TS_X86_NAME "avx2"
#define TS_X86_MAKE make_avx2_kernels
#include "quant/kernels_x86.h"
