// Weft's own implementation of the TOSA 1.0 compliance rules (the specification's floating-point
// precision requirements and its reference-check pseudocode), held against the reference model's
// verify library by the conformance runner: EXACT, ULP, ABS_ERROR, RELATIVE, REDUCE_PRODUCT,
// FP_SPECIAL and DOT_PRODUCT. Where the specification and the verify library differ, this follows
// the library, whose verdicts the conformance suite is graded by (docs/conformance.md):
// a NaN error bound fails, and a reference below fp64's normal range still has a ULP.
#include <cmath>
#include <nlohmann/json.hpp>

#include "weft/conformance.h"

namespace weft::conformance {

namespace {

struct FloatFormat {
  double normal_min;
  double normal_max;  // the largest finite value
  int frac;           // fraction bits
  bool has_inf;
};

std::optional<FloatFormat> float_format(DType t) {
  switch (t) {
    case DType::kFp32: return FloatFormat{std::ldexp(1.0, -126), std::ldexp(1.0, 128) - std::ldexp(1.0, 104), 23, true};
    case DType::kBf16: return FloatFormat{std::ldexp(1.0, -126), std::ldexp(1.0, 128) - std::ldexp(1.0, 120), 7, true};
    case DType::kFp16: return FloatFormat{std::ldexp(1.0, -14), 65504.0, 10, true};
    case DType::kFp8E4M3: return FloatFormat{std::ldexp(1.0, -6), 448.0, 3, false};
    case DType::kFp8E5M2: return FloatFormat{std::ldexp(1.0, -14), 57344.0, 2, true};
    default: return std::nullopt;
  }
}

// The value as the output type holds it (rounded to nearest even; beyond the range, infinity).
double as_output_type(DType t, double v) {
  uint8_t bytes[8] = {};
  store_from_double(t, bytes, v);
  return load_as_double(t, bytes);
}

// The size of one unit in the last place at `ref` in the output format: 0 for zero, inf and NaN.
double ulp(const FloatFormat& f, double ref) {
  if (!std::isfinite(ref) || ref == 0) return 0;
  const double a = std::fabs(ref);
  return std::max(std::ldexp(1.0, std::ilogb(a)), f.normal_min) * std::ldexp(1.0, -f.frac);
}

// imp within [ref - low, ref + high] (towards zero / away from zero), with overflow to infinity
// allowed beyond the format's range and flush to zero below its normal range.
bool within(const FloatFormat& f, double imp, double ref, double low, double high) {
  if (std::isnan(ref)) return std::isnan(imp);
  if (std::isnan(low) || std::isnan(high) || low < 0 || high < 0) return false;
  if (std::isinf(low) && std::isinf(high)) return true;
  if (ref < 0) {
    ref = -ref;
    imp = -imp;
  }
  double max = ref + high, min = ref - low;
  if (max > f.normal_max) max = INFINITY;
  if (min > f.normal_max) min = INFINITY;
  if (min < -f.normal_max) min = -INFINITY;
  if (f.frac > 3 && imp == 0 && min < f.normal_min) return true;  // flush to zero (fp32, fp16, bf16)
  if (std::isnan(imp)) return !f.has_inf && max == INFINITY;
  return min <= imp && imp <= max;
}

std::string element(size_t i, double imp, double ref) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "element %zu: %.9g, reference %.17g", i, imp, ref);
  return buf;
}

}  // namespace

Verdict check(const std::string& compliance, const Tensor& imp, std::span<const double> ref,
              std::span<const double> bounds) {
  Verdict v;
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(compliance);
  } catch (const nlohmann::json::exception&) {
    return v;
  }
  const std::string mode = c.value("mode", "");
  const DType t = imp.dtype();
  const size_t n = static_cast<size_t>(imp.num_elements());
  auto value = [&](size_t i) { return load_as_double(t, imp.buffer().data() + i * storage_size(t)); };
  auto fail = [&](std::string why) {
    v.handled = true;
    v.pass = false;
    v.why = std::move(why);
    return v;
  };
  if (ref.size() != n) return fail(std::to_string(n) + " elements, the reference has " + std::to_string(ref.size()));
  const std::optional<FloatFormat> fmt = float_format(t);
  const bool needs_bounds = mode == "FP_SPECIAL" || mode == "DOT_PRODUCT";
  if (needs_bounds && bounds.size() != n) return v;  // no bounds given: not judged here

  if (mode == "EXACT") {
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i];
      bool ok;
      if (fmt && fmt->frac > 3) ok = within(*fmt, x, as_output_type(t, r), 0, 0);
      else if (fmt) ok = std::isnan(r) ? std::isnan(x) : x == as_output_type(t, r);
      else ok = x == r;
      if (!ok) return fail(element(i, x, r));
    }
  } else if (!fmt) {
    return v;  // the other modes are for floating-point outputs
  } else if (mode == "ULP") {
    const nlohmann::json& u = c.value("ulp_info", nlohmann::json::object());
    const double high = u.value("ulp", 0.5), low = u.value("ulp_lower", high);
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i], size = ulp(*fmt, r);
      if (!within(*fmt, x, r, size * low, size * high))
        return fail(element(i, x, r) + " (more than " + std::to_string(high) + " ULP)");
    }
  } else if (mode == "ABS_ERROR") {
    const nlohmann::json& a = c.value("abs_error_info", nlohmann::json::object());
    const double lower_bound = a.value("lower_bound", 0.0), normal_divisor = a.value("normal_divisor", 1.0);
    const double max_compare = a.value("max_compare", 0.0), base_bound = a.value("base_bound", 0.0);
    const bool as_magnitude = a.value("bound_as_magnitude", false);
    const double scale = std::ldexp(1.0, static_cast<int>(-fmt->frac / normal_divisor));
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i];
      double b = bounds.size() == n ? bounds[i] : 0.0, m = r;
      if (as_magnitude) {
        m = b;
        b = 0;
      }
      b += base_bound;
      double e = 0;
      if (std::isfinite(b) || m != 0) {
        double w = std::max(std::fabs(m), fmt->normal_min);
        if (lower_bound > 0) w = std::max(lower_bound / b, w);
        e = scale * w * b;
      }
      if (max_compare > 0) e = std::max(e, max_compare);
      if (!within(*fmt, x, r, e, e)) return fail(element(i, x, r) + " (absolute error bound " + std::to_string(e) + ")");
    }
  } else if (mode == "RELATIVE") {
    const nlohmann::json& rel = c.value("relative_info", nlohmann::json::object());
    const double relative = rel.value("max", 0.0) * rel.value("scale", 0.0), ulps = rel.value("ulp_bound", 0.0);
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i], e = std::max(relative, ulps * ulp(*fmt, r));
      if (!within(*fmt, x, r, e, e)) return fail(element(i, x, r) + " (relative bound " + std::to_string(e) + ")");
    }
  } else if (mode == "REDUCE_PRODUCT") {
    const double count = c.value("reduce_product_info", nlohmann::json::object()).value("n", 1.0);
    const double growth = std::pow(1.0 + std::ldexp(1.0, -fmt->frac - 1), count) - 1.0;
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i], e = std::max(std::fabs(r), fmt->normal_min) * growth;
      if (!within(*fmt, x, r, e, e)) return fail(element(i, x, r) + " (product bound " + std::to_string(e) + ")");
    }
  } else if (mode == "FP_SPECIAL") {
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i];
      const bool ok = (r == 0 && x == 0) || (std::isnan(x) && (std::isnan(r) || std::isnan(bounds[i]))) ||
                      (std::isnan(x) == std::isnan(r) && std::isfinite(x) == std::isfinite(r) &&
                       std::signbit(x) == std::signbit(r));
      if (!ok) return fail(element(i, x, r) + " (special values)");
    }
  } else if (mode == "DOT_PRODUCT") {
    const nlohmann::json& d = c.value("dot_product_info", nlohmann::json::object());
    const double ksb = d.value("ksb", 1.0);
    const int s = d.value("s", 0);
    const double abs_bound = d.value("abs_bound", 2.0 * ksb), variance = d.value("variance_error_bound", 1.6 * ksb);
    const double half_ulp = std::ldexp(1.0, -1 - fmt->frac);
    double sum = 0, sumsq = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i], bnd = bounds[i];
      if (std::isnan(r)) {
        if (!std::isnan(x)) return fail(element(i, x, r) + " (the reference is NaN)");
        continue;
      }
      if (std::isnan(bnd)) continue;
      if (std::isinf(as_output_type(t, bnd * (1.0 + abs_bound * half_ulp)))) continue;  // may overflow
      if (bnd == 0) {
        if (r != 0 || x != 0) return fail(element(i, x, r) + " (a zero bound needs zero)");
        continue;
      }
      const double err = (x - r) / std::max(bnd * half_ulp, fmt->normal_min);
      if (!(std::fabs(err) <= abs_bound))
        return fail(element(i, x, r) + " (error " + std::to_string(err) + " beyond " + std::to_string(abs_bound) + ")");
      sum += err;
      sumsq += err * err;
    }
    const double count = static_cast<double>(n);
    if (s >= 3 && s <= 5 && std::fabs(sum) > std::sqrt(10.0 * variance * count))
      return fail("the errors are biased: their sum " + std::to_string(sum) + " exceeds " +
                  std::to_string(std::sqrt(10.0 * variance * count)));
    if (sumsq > variance * count)
      return fail("the errors' sum of squares " + std::to_string(sumsq) + " exceeds " + std::to_string(variance * count));
  } else {
    return v;
  }
  v.handled = true;
  v.pass = true;
  return v;
}

}  // namespace weft::conformance
