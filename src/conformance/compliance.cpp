// Weft's own implementation of the TOSA 1.0 compliance rules (the specification's appendix on
// floating-point accuracy), held against the reference model's verify library by the runner.
// Implemented: EXACT and ULP. The other modes (DOT_PRODUCT, ABS_ERROR, RELATIVE, REDUCE_PRODUCT,
// FP_SPECIAL) are judged by the library alone, and the runner says so.
#include <cmath>
#include <nlohmann/json.hpp>

#include "weft/conformance.h"

namespace weft::conformance {

namespace {

struct FloatFormat {
  int mantissa_bits;
  int min_exponent;  // of the smallest normal value
};

std::optional<FloatFormat> float_format(DType t) {
  switch (t) {
    case DType::kFp32: return FloatFormat{23, -126};
    case DType::kFp16: return FloatFormat{10, -14};
    case DType::kBf16: return FloatFormat{7, -126};
    case DType::kFp8E4M3: return FloatFormat{3, -6};
    case DType::kFp8E5M2: return FloatFormat{2, -14};
    default: return std::nullopt;
  }
}

// The reference value as the output type holds it (rounded to nearest even).
double as_output_type(DType t, double v) {
  uint8_t bytes[8] = {};
  store_from_double(t, bytes, v);
  return load_as_double(t, bytes);
}

std::string element(size_t i, double imp, double ref) {
  return "element " + std::to_string(i) + ": " + std::to_string(imp) + ", reference " + std::to_string(ref);
}

}  // namespace

Verdict check(const std::string& compliance, const Tensor& imp, std::span<const double> ref) {
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
  if (ref.size() != n) {
    v.handled = true;
    v.why = std::to_string(n) + " elements, the reference has " + std::to_string(ref.size());
    return v;
  }
  const std::optional<FloatFormat> fmt = float_format(t);
  auto value = [&](size_t i) { return load_as_double(t, imp.buffer().data() + i * storage_size(t)); };
  if (mode == "EXACT") {
    v.handled = true;
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i];
      const bool ok = fmt ? (std::isnan(r) ? std::isnan(x) : x == as_output_type(t, r)) : x == r;
      if (!ok) {
        v.why = element(i, x, r);
        return v;
      }
    }
    v.pass = true;
    return v;
  }
  if (mode == "ULP" && fmt && c.contains("ulp_info")) {
    v.handled = true;
    const double ulps = c["ulp_info"].value("ulp", 0.5);
    for (size_t i = 0; i < n; ++i) {
      const double x = value(i), r = ref[i];
      bool ok;
      if (std::isnan(r)) {
        ok = std::isnan(x);
      } else if (std::isinf(r) || std::isinf(as_output_type(t, r))) {
        ok = x == as_output_type(t, r);  // beyond the type's range: the infinity it rounds to
      } else {
        const int e = r == 0 ? fmt->min_exponent : std::max(static_cast<int>(std::floor(std::log2(std::fabs(r)))),
                                                           fmt->min_exponent);
        const double ulp = std::ldexp(1.0, e - fmt->mantissa_bits);
        ok = std::fabs(x - r) <= ulps * ulp;
      }
      if (!ok) {
        v.why = element(i, x, r) + " (more than " + std::to_string(ulps) + " ULP)";
        return v;
      }
    }
    v.pass = true;
    return v;
  }
  return v;  // not handled here
}

}  // namespace weft::conformance
