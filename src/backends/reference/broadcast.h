// Numpy-style broadcasting for the elementwise reference kernels (TOSA apply_broadcast): every
// input has the output's rank and each of its dimensions equals the output's or is 1.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "weft/tensor.h"

namespace weft::ref {

// True if `in` broadcasts to `out` under the TOSA rule (same rank, dims equal or 1).
inline bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() != out.size()) return false;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out[d] && in[d] != 1) return false;
  }
  return true;
}

// Calls run(out_index, length, std::array<int64_t, N> in_index, std::array<int64_t, N> in_step) for
// the output elements [begin, end) in row-major order, one call per stretch of the innermost
// dimension: output elements out_index .. out_index + length - 1 take input k's elements
// in_index[k] + j * in_step[k] (in_step is 0 where input k broadcasts, 1 where it runs along). The
// caller has checked broadcasts_to() for every input. Neighbouring dimensions every input treats
// alike are merged first (longer runs), and the outer dimensions advance as an odometer, so only
// the start of the range is decomposed.
template <size_t N, class R>
void broadcast_runs(const Shape& out, const std::array<const Shape*, N>& ins, int64_t begin, int64_t end, R&& run) {
  if (begin >= end) return;
  std::array<int64_t, N> idx, one;
  one.fill(1);
  bool all_same = true;
  for (size_t k = 0; k < N; ++k) all_same = all_same && (*ins[k] == out);
  if (all_same) {
    idx.fill(begin);
    run(begin, end - begin, idx, one);
    return;
  }
  const int rank = static_cast<int>(out.size());
  if (rank == 0) {  // one element
    idx.fill(0);
    run(0, 1, idx, one);
    return;
  }
  {
    // Neighbouring output dimensions that every input treats alike (present in both, or broadcast
    // in both; a dimension of size 1 goes with anything) merge into one: the same flat indices,
    // a longer innermost run and fewer odometer turns (a [1,3,49,49] bias added to
    // [64,3,49,49] attention scores runs as [1,7203] onto [64,7203]).
    enum : char { kAny, kFull, kBroadcast };
    Shape merged_out;
    std::array<Shape, N> merged_in;
    std::array<char, N> state{};
    for (size_t d = 0; d < out.size(); ++d) {
      bool fits = !merged_out.empty();
      std::array<char, N> now{};
      for (size_t k = 0; k < N; ++k) {
        now[k] = out[d] == 1 ? kAny : ((*ins[k])[d] == 1 ? kBroadcast : kFull);
        if (now[k] != kAny && state[k] != kAny && now[k] != state[k]) fits = false;
      }
      if (fits) {
        merged_out.back() *= out[d];
        for (size_t k = 0; k < N; ++k) {
          merged_in[k].back() *= (*ins[k])[d];
          if (now[k] != kAny) state[k] = now[k];
        }
      } else {
        merged_out.push_back(out[d]);
        for (size_t k = 0; k < N; ++k) merged_in[k].push_back((*ins[k])[d]);
        state = now;
      }
    }
    if (merged_out.size() < out.size()) {
      std::array<const Shape*, N> merged_ptrs;
      for (size_t k = 0; k < N; ++k) merged_ptrs[k] = &merged_in[k];
      broadcast_runs<N>(merged_out, merged_ptrs, begin, end, run);
      return;
    }
  }
  // strides[k][d]: how far input k's flat index moves when output dimension d advances by one.
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    strides[k].assign(static_cast<size_t>(rank), 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t dim = (*ins[k])[static_cast<size_t>(d)];
      strides[k][static_cast<size_t>(d)] = (dim == 1) ? 0 : s;
      s *= dim;
    }
  }
  const size_t last = static_cast<size_t>(rank - 1);
  const int64_t inner = out[last];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][last];
  // Decompose `begin` into the odometer position (outer dimensions) and the inner offset j.
  std::vector<int64_t> counter(static_cast<size_t>(rank), 0);
  int64_t rem = begin;
  for (int d = rank - 1; d >= 0; --d) {
    counter[static_cast<size_t>(d)] = rem % out[static_cast<size_t>(d)];
    rem /= out[static_cast<size_t>(d)];
  }
  std::array<int64_t, N> base{};
  for (size_t k = 0; k < N; ++k) {
    for (size_t d = 0; d < last; ++d) base[k] += counter[d] * strides[k][d];
  }
  int64_t j = counter[last];
  int64_t o = begin;
  while (true) {
    const int64_t stop = std::min(inner, j + (end - o));
    for (size_t k = 0; k < N; ++k) idx[k] = base[k] + j * inner_stride[k];
    run(o, stop - j, idx, inner_stride);
    o += stop - j;
    if (o >= end) break;
    j = 0;
    // Advance the odometer over dimensions rank-2 .. 0.
    for (int d = rank - 2; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      ++counter[du];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][du];
      if (counter[du] < out[du]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][du] * counter[du];
      counter[du] = 0;
    }
  }
}

// Calls f(out_index, std::array<int64_t, N> in_index) for the output elements [begin, end) in
// row-major order, where in_index[k] is the flat index of the element input k contributes (one
// element at a time over broadcast_runs).
template <size_t N, class F>
void broadcast_for_range(const Shape& out, const std::array<const Shape*, N>& ins, int64_t begin, int64_t end,
                         F&& f) {
  broadcast_runs<N>(out, ins, begin, end,
                    [&](int64_t o, int64_t len, const std::array<int64_t, N>& base, const std::array<int64_t, N>& step) {
                      std::array<int64_t, N> idx;
                      for (int64_t j = 0; j < len; ++j) {
                        for (size_t k = 0; k < N; ++k) idx[k] = base[k] + j * step[k];
                        f(o + j, idx);
                      }
                    });
}

// All output elements.
template <size_t N, class F>
void broadcast_for_each(const Shape& out, const std::array<const Shape*, N>& ins, F&& f) {
  broadcast_for_range<N>(out, ins, 0, shape_elements(out), f);
}

}  // namespace weft::ref
