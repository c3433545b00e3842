// Strided copies for the CPU backend (Region::kSliceCopies): a SLICE of a shuffled tensor written
// straight from the tensor before the shuffle, or from the two pieces of a concatenation before it
// (ShuffleNet's channel shuffle and split: each half is an interleave of the two branches'
// channels). One pass over the result instead of a concatenation, a transpose and a slice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::backend::cpu {

// A copy into contiguous memory: result element (i0, ..., ik) in row-major order is source element
// offset + sum(i_d * strides[d]) (in elements), taken from source 1 instead of source 0 where the
// index along dimension `select` (extent 2, stride 0) is 1.
// The most dimensions a copy may have (its loop indices live on the stack).
inline constexpr size_t kMaxViewRank = 16;

struct ViewCopy {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  int select = -1;
  size_t element_bytes = 4;
};

// The same copy with dimensions of extent 1 dropped and neighbours that address one run merged
// (fewer, longer loops).
ViewCopy simplify(const ViewCopy& c);

// Runs simplified copy `c` from `src0` (and `src1` with a select dimension) into `out`. Element sizes
// 1, 2, 4 and 8 bytes, at most kMaxViewRank dimensions; the result holds the product of dims elements.
void run_view_copy(const ViewCopy& c, const uint8_t* src0, const uint8_t* src1, uint8_t* out);

}  // namespace weft::backend::cpu
