#include "backends/onednn/view_copy.h"

#include <cstring>

#include "backends/onednn/lanes.h"

namespace weft::backend::cpu {

ViewCopy simplify(const ViewCopy& c) {
  ViewCopy r;
  r.offset = c.offset;
  r.element_bytes = c.element_bytes;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    const bool sel = static_cast<int>(d) == c.select;
    if (c.dims[d] == 1 && !sel) continue;
    if (sel) r.select = static_cast<int>(r.dims.size());
    r.dims.push_back(c.dims[d]);
    r.strides.push_back(c.strides[d]);
  }
  // Merge dimension k into k + 1 where k's stride steps over all of k + 1 (neither selects).
  for (size_t k = r.dims.size(); k-- > 1;) {
    const size_t i = k - 1;
    if (static_cast<int>(i) == r.select || static_cast<int>(k) == r.select) continue;
    if (r.strides[i] != r.strides[k] * r.dims[k]) continue;
    r.dims[k] *= r.dims[i];
    r.dims.erase(r.dims.begin() + static_cast<long>(i));
    r.strides.erase(r.strides.begin() + static_cast<long>(i));
    if (r.select > static_cast<int>(i)) --r.select;
  }
  if (r.dims.empty()) {
    r.dims = {1};
    r.strides = {1};
  }
  return r;
}

namespace {

// out[2j] = a[j], out[2j + 1] = b[j] for 4-byte elements, eight pairs at a time.
typedef uint32_t U32x8 __attribute__((vector_size(32)));
template <int>  // (one width: eight pairs, two ymm or four xmm shuffles)
WEFT_CPU_BODY void interleave32_body(const uint32_t* a, const uint32_t* b, int64_t n, uint32_t* out) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    U32x8 va, vb;
    std::memcpy(&va, a + j, sizeof va);
    std::memcpy(&vb, b + j, sizeof vb);
    const U32x8 lo = __builtin_shuffle(va, vb, U32x8{0, 8, 1, 9, 2, 10, 3, 11});
    const U32x8 hi = __builtin_shuffle(va, vb, U32x8{4, 12, 5, 13, 6, 14, 7, 15});
    std::memcpy(out + 2 * j, &lo, sizeof lo);
    std::memcpy(out + 2 * j + 8, &hi, sizeof hi);
  }
  for (; j < n; ++j) {
    out[2 * j] = a[j];
    out[2 * j + 1] = b[j];
  }
}
WEFT_CPU_DISPATCH(interleave32, (const uint32_t* a, const uint32_t* b, int64_t n, uint32_t* out), (a, b, n, out))

template <typename T>
void copy_rows(const ViewCopy& c, const uint8_t* src0, const uint8_t* src1, uint8_t* out_bytes) {
  const T* s0 = reinterpret_cast<const T*>(src0);
  const T* s1 = reinterpret_cast<const T*>(src1);
  T* out = reinterpret_cast<T*>(out_bytes);
  const size_t rank = c.dims.size();
  // The innermost loop: a contiguous run, an interleave of the two sources (select innermost over a
  // contiguous run), or a strided run.
  const bool pairs = rank >= 2 && c.select == static_cast<int>(rank) - 1 && c.strides[rank - 2] == 1;
  const size_t inner_dims = pairs ? 2 : 1;
  const int64_t run = pairs ? c.dims[rank - 2] : c.dims[rank - 1];
  const int64_t step = c.strides[rank - 1];
  const size_t outer = rank - inner_dims;
  int64_t idx[kMaxViewRank] = {};
  int64_t rows = 1;
  for (size_t d = 0; d < outer; ++d) rows *= c.dims[d];
  const int64_t row_elems = pairs ? 2 * run : run;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = c.offset;
    bool second = false;
    for (size_t d = 0; d < outer; ++d) {
      at += idx[d] * c.strides[d];
      if (static_cast<int>(d) == c.select) second = idx[d] == 1;
    }
    T* o = out + r * row_elems;
    if (pairs) {
      if constexpr (sizeof(T) == 4) {
        interleave32(reinterpret_cast<const uint32_t*>(s0 + at), reinterpret_cast<const uint32_t*>(s1 + at), run,
                     reinterpret_cast<uint32_t*>(o));
      } else {
        for (int64_t j = 0; j < run; ++j) {
          o[2 * j] = s0[at + j];
          o[2 * j + 1] = s1[at + j];
        }
      }
    } else {
      const T* s = (second ? s1 : s0) + at;
      if (static_cast<int>(rank) - 1 == c.select) {
        o[0] = s0[at];
        o[1] = s1[at];
      } else if (step == 1) {
        std::memcpy(o, s, static_cast<size_t>(run) * sizeof(T));
      } else {
        for (int64_t j = 0; j < run; ++j) o[j] = s[j * step];
      }
    }
    for (size_t d = outer; d-- > 0;) {
      if (++idx[d] < c.dims[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void run_view_copy(const ViewCopy& c, const uint8_t* src0, const uint8_t* src1, uint8_t* out) {
  switch (c.element_bytes) {
    case 1: copy_rows<uint8_t>(c, src0, src1, out); break;
    case 2: copy_rows<uint16_t>(c, src0, src1, out); break;
    case 4: copy_rows<uint32_t>(c, src0, src1, out); break;
    default: copy_rows<uint64_t>(c, src0, src1, out); break;
  }
}

}  // namespace weft::backend::cpu
