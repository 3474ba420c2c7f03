// The avx512vnni kernel table. AVX-512 with VNNI: as avx512, with the int16 dots on vpdpwssd and 8-bit prefill panels on vpdpbusd.
#define TS_X86_VNNI 1
#define TS_X86_WIDE 1
#define TS_X86_TILE_R 4
#define TS_X86_TILE_T 4
#define TS_X86_NAME "avx512-vnni"
#define TS_X86_MAKE make_avx512vnni_kernels
#include "quant/kernels_x86.h"
