// Shared by Weft's own CPU loops (gemv.cpp, channel_chain.cpp): 16-float vectors written with GCC's
// vector extension, and WEFT_CPU_CLONES, which has GCC build one copy of a function per instruction
// set (AVX-512, AVX2 + FMA, baseline) and pick one at load time (ifunc); the vectors become zmm, ymm
// or xmm operations in each copy.
#pragma once

#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WEFT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WEFT_CPU_CLONES
#endif

// The helpers pass 64-byte vectors by value; they are always inlined into the clones, so GCC's note
// that such values travel differently without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace weft::backend::cpu {

typedef float Lanes __attribute__((vector_size(64)));

__attribute__((always_inline)) inline Lanes load_lanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

__attribute__((always_inline)) inline void store_lanes(float* p, const Lanes& v) { std::memcpy(p, &v, sizeof v); }

}  // namespace weft::backend::cpu
