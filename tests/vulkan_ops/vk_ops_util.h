// Shared by the Vulkan-versus-reference operator tests: seeded random tensors of every shader type,
// running a module on the Vulkan backend (falling back to the reference backend for what it declines)
// and on the reference backend alone, and the comparison: integers and bool bit for bit, floats within
// tol * max(1, max |reference|). A test also says how many nodes it expects on Vulkan, so that a
// silent fallback (the reference compared with itself) fails.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft::vk_test {

// Seeded random values: floats uniform in [lo, hi]; integers uniform in [lo, hi] clipped to the type's
// range (so lo = -1e18, hi = 1e18 covers the whole range); bool 0/1.
inline Tensor random_tensor(const TensorType& t, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  const size_t n = static_cast<size_t>(shape_elements(t.shape));
  if (is_float(t.dtype)) {
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (double& x : v) x = d(rng);
    return Tensor::from_doubles(t, v);
  }
  int64_t a = 0, b = 1;
  if (t.dtype != DType::kBool) {
    a = static_cast<int64_t>(std::max<double>(lo, static_cast<double>(int_min(t.dtype))));
    b = static_cast<int64_t>(std::min<double>(hi, static_cast<double>(int_max(t.dtype))));
  }
  std::uniform_int_distribution<int64_t> d(a, b);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng);
  return Tensor::from_ints(t, v);
}

inline BackendOptions vulkan_first() { return BackendOptions{.backends = {"vulkan", "reference"}}; }
inline BackendOptions reference_only() { return BackendOptions{.backends = {"reference"}}; }

// Every element of `got` equal to `want` (integers, bool) or within tol * max(1, max |want|) (floats;
// NaN matches NaN, equal infinities match).
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.type() != want.type())
    return ::testing::AssertionFailure() << "type " << got.type().str() << " vs reference " << want.type().str();
  const bool exact = !is_float(want.type().dtype);
  double scale = 1.0;
  for (int64_t i = 0; i < want.num_elements(); ++i)
    if (std::isfinite(want.at_double(i))) scale = std::max(scale, std::abs(want.at_double(i)));
  const double bound = exact ? 0.0 : tol * scale;
  int64_t bad = 0, worst = -1;
  double worst_err = -1;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double err;
    if (exact) {
      err = got.at_int(i) == want.at_int(i) ? 0.0 : std::abs(static_cast<double>(got.at_int(i) - want.at_int(i)));
    } else {
      const double g = got.at_double(i), w = want.at_double(i);
      if (std::isnan(w) || std::isnan(g))
        err = std::isnan(w) && std::isnan(g) ? 0.0 : std::numeric_limits<double>::infinity();
      else if (g == w)
        err = 0.0;
      else
        err = std::abs(g - w);
    }
    if (err > bound) ++bad;
    if (err > worst_err) worst_err = err, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.num_elements() << " elements differ by more than "
                                       << bound << "; worst: element " << worst << " vulkan " << got.at_double(worst)
                                       << " vs reference " << want.at_double(worst) << " (error " << worst_err << ")";
}

// Number of nodes the explain text's summary places on the Vulkan backend ("  vulkan: K kernels
// covering N nodes").
inline int vulkan_nodes(const std::string& explain) {
  const std::string key = "\n  vulkan: ";
  size_t pos = explain.find(key);
  if (pos == std::string::npos) return 0;
  pos = explain.find("covering ", pos);
  return pos == std::string::npos ? 0 : std::stoi(explain.substr(pos + 9));
}

// Runs `m` on Vulkan (+ reference fallback) and on the reference backend alone and compares every
// output. `vulkan_min`: at least this many nodes must run on Vulkan (-1: every node that is not a
// CONST / CONST_SHAPE). Returns the Vulkan model's explain text.
inline std::string check_vs_reference(const Module& m, const std::vector<Tensor>& inputs, double tol,
                                      int vulkan_min = -1) {
  auto a = Model::from_module(m, vulkan_first());
  auto b = Model::from_module(m, reference_only());
  const std::string ex = a->explain();
  if (vulkan_min < 0) {
    vulkan_min = 0;
    for (const Node& n : m.main().nodes()) vulkan_min += n.op != Op::CONST && n.op != Op::CONST_SHAPE;
  }
  EXPECT_GE(vulkan_nodes(ex), vulkan_min) << ex;
  Context ca(a), cb(b);
  auto oa = ca.run(inputs);
  auto ob = cb.run(inputs);
  EXPECT_EQ(oa.size(), ob.size());
  for (size_t i = 0; i < oa.size() && i < ob.size(); ++i) EXPECT_TRUE(close(oa[i], ob[i], tol)) << "output " << i << "\n" << ex;
  return ex;
}

}  // namespace weft::vk_test
