// Shared by Weft's own CPU loops (gemv.cpp, channel_chain.cpp, elementwise_loop.cpp, view_copy.cpp):
// vectors written with GCC's vector extension, and WEFT_CPU_DISPATCH, which builds one copy of a
// loop per instruction set (AVX-512, AVX2 + FMA, baseline) from one always-inlined body, templated
// on the vector width W in floats: 16 (zmm), 8 (ymm) or 4 (xmm), the copy's native width. (A first
// version used 16-float vectors in every copy: GCC lowers a vector wider than the target's piece by
// piece and keeps it on the stack, broadcasts and comparisons lane by lane. The AVX2 copies ran up to
// 9 times slower than they do at their native width; see docs/backends.md.)
//
// The copy is chosen by cpu_level() at the first call, not by an ifunc at load time (GCC's
// target_clones): the dynamic loader runs ifunc resolvers before any constructor, so a process that
// masks CPUID features from its first constructor on (bench/cpu_avx2's LD_PRELOAD library, which
// presents an AVX-512 CPU as an AVX2 one) would still have run the AVX-512 copies. cpu_level() also
// names the copy in profiles (cpu_level_name), so the name and the code that runs agree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace weft::backend::cpu {

enum class CpuLevel { kBaseline, kAvx2, kAvx512 };

// x86-64-v4 (AVX-512 F/BW/CD/DQ/VL), x86-64-v3 (AVX2, FMA, BMI, F16C, ...) or neither, read from CPUID
// once, at the first call. WEFT_CPU_ISA=avx2 or =sse2 caps it (as ONEDNN_MAX_CPU_ISA caps oneDNN), so
// that one machine can test and time every copy; it never raises the level past the CPU's.
inline CpuLevel cpu_level() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  static const CpuLevel level = [] {
    __builtin_cpu_init();
    CpuLevel l = __builtin_cpu_supports("x86-64-v4") != 0   ? CpuLevel::kAvx512
                 : __builtin_cpu_supports("x86-64-v3") != 0 ? CpuLevel::kAvx2
                                                            : CpuLevel::kBaseline;
    if (const char* cap = std::getenv("WEFT_CPU_ISA"); cap != nullptr && *cap != '\0') {
      const std::string_view c(cap);
      if (c == "avx2") {
        l = std::min(l, CpuLevel::kAvx2);
      } else if (c == "sse2") {
        l = CpuLevel::kBaseline;
      } else if (c != "avx512" && c != "native") {
        std::fprintf(stderr, "weft: WEFT_CPU_ISA=%s is not one of avx512, avx2, sse2, native; ignored\n", cap);
      }
    }
    return l;
  }();
  return level;
#else
  return CpuLevel::kBaseline;
#endif
}

// "avx512", "avx2", "sse2" ("generic" off x86-64): the suffix of Weft's kernels in profiles.
inline const char* cpu_level_name(CpuLevel level) {
#if defined(__x86_64__)
  return level == CpuLevel::kAvx512 ? "avx512" : level == CpuLevel::kAvx2 ? "avx2" : "sse2";
#else
  (void)level;
  return "generic";
#endif
}

// The name of the copy this CPU runs (cpu_level()).
inline const char* cpu_level_name() { return cpu_level_name(cpu_level()); }

}  // namespace weft::backend::cpu

// WEFT_CPU_BODY marks a loop's body, a template on its vector width (`template <int W> WEFT_CPU_BODY
// void NAME_body(PARAMS)`); WEFT_CPU_DISPATCH(NAME, (PARAMS), (ARGS)) then defines `void NAME(PARAMS)`,
// which runs the body's AVX-512 (W = 16), AVX2 (8) or baseline (4) copy by cpu_level(). The body has
// no target of its own, so GCC inlines it into each copy and compiles it for that copy's
// instruction set.
#define WEFT_CPU_BODY __attribute__((always_inline)) inline
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WEFT_CPU_DISPATCH(name, params, args)                                                          \
  __attribute__((target("arch=x86-64-v4"))) static void name##_avx512 params { name##_body<16> args; } \
  __attribute__((target("arch=x86-64-v3"))) static void name##_avx2 params { name##_body<8> args; }    \
  static void name##_baseline params { name##_body<4> args; }                                          \
  void name params {                                                                                   \
    switch (::weft::backend::cpu::cpu_level()) {                                                       \
      case ::weft::backend::cpu::CpuLevel::kAvx512: return name##_avx512 args;                         \
      case ::weft::backend::cpu::CpuLevel::kAvx2: return name##_avx2 args;                             \
      default: return name##_baseline args;                                                            \
    }                                                                                                  \
  }
#else
#define WEFT_CPU_DISPATCH(name, params, args) \
  void name params { name##_body<4> args; }
#endif

// The helpers pass vectors by value; they are always inlined into the copies, so GCC's note
// that such values travel differently without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace weft::backend::cpu {

// W floats (and W int32s) as one vector of GCC's vector extension: one native register where W is
// the copy's width.
template <int W>
struct VecOf {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
};
template <int W>
using VecF = typename VecOf<W>::F;
template <int W>
using VecI = typename VecOf<W>::I;

template <int W>
__attribute__((always_inline)) inline VecF<W> load_vec(const float* p) {
  VecF<W> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <int W>
__attribute__((always_inline)) inline void store_vec(float* p, const VecF<W>& v) {
  std::memcpy(p, &v, sizeof v);
}

// Sixteen floats as 16 / W native vectors: the loops that keep one sum per lane (gemv.cpp) keep
// sixteen at every width, so that every copy adds the same products in the same order.
template <int W>
struct Float16 {
  static constexpr int kParts = 16 / W;
  VecF<W> part[kParts];

  __attribute__((always_inline)) static Float16 zero() {
    Float16 r;
    for (int i = 0; i < kParts; ++i) r.part[i] = VecF<W>{};
    return r;
  }
  __attribute__((always_inline)) static Float16 splat(float x) {
    Float16 r;
    for (int i = 0; i < kParts; ++i) r.part[i] = VecF<W>{} + x;
    return r;
  }
  __attribute__((always_inline)) static Float16 load(const float* p) {
    Float16 r;
    for (int i = 0; i < kParts; ++i) r.part[i] = load_vec<W>(p + i * W);
    return r;
  }
  __attribute__((always_inline)) void store(float* p) const {
    for (int i = 0; i < kParts; ++i) store_vec<W>(p + i * W, part[i]);
  }
  // this += a * b, lane by lane
  __attribute__((always_inline)) void add_product(const Float16& a, const Float16& b) {
    for (int i = 0; i < kParts; ++i) part[i] += a.part[i] * b.part[i];
  }
  // The sixteen lanes summed in lane order.
  __attribute__((always_inline)) float sum() const {
    float s = 0;
    for (int i = 0; i < kParts; ++i)
      for (int j = 0; j < W; ++j) s += part[i][j];
    return s;
  }
};

}  // namespace weft::backend::cpu
