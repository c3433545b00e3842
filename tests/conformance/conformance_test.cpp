// The TOSA conformance runner (weft/conformance.h): Weft's own compliance rules on synthetic
// results, and, where ../shared has the reference tools and the suite, a sample of the suite on the
// interpreter and the CPU backend with every verdict agreeing between Weft's checker and the
// reference model's verify library.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "weft/conformance.h"
#include "weft/runtime.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using conformance::check;

const fs::path kShared = fs::path(WEFT_SOURCE_DIR) / "../shared";

Tensor f32(std::vector<double> v) { return Tensor::from_doubles(TensorType{DType::kFp32, {static_cast<int64_t>(v.size())}}, v); }

TEST(Compliance, ExactComparesInTheOutputType) {
  // 0.1 is not an fp32 value: EXACT means equal to the reference rounded to fp32.
  EXPECT_TRUE(check(R"({"mode": "EXACT"})", f32({0.1, -0.0, NAN}), std::vector<double>{0.1, 0.0, NAN}).pass);
  const auto v = check(R"({"mode": "EXACT"})", f32({0.1, 1}), std::vector<double>{0.1, 1.0000001});
  EXPECT_TRUE(v.handled);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.why.find("element 1"), std::string::npos) << v.why;
  const Tensor ints = Tensor::from_ints(TensorType{DType::kInt32, {2}}, std::vector<int64_t>{7, -3});
  EXPECT_TRUE(check(R"({"mode": "EXACT"})", ints, std::vector<double>{7, -3}).pass);
  EXPECT_FALSE(check(R"({"mode": "EXACT"})", ints, std::vector<double>{7, -2}).pass);
}

TEST(Compliance, UlpScalesWithTheReferencesExponent) {
  const double ulp1 = std::ldexp(1.0, -23);  // one fp32 ULP at 1.0
  const std::string half = R"({"mode": "ULP", "ulp_info": {"ulp": 0.5}})";
  EXPECT_TRUE(check(half, f32({1.0}), std::vector<double>{1.0 + 0.5 * ulp1}).pass);
  EXPECT_FALSE(check(half, f32({1.0}), std::vector<double>{1.0 + 0.6 * ulp1}).pass);
  const std::string five = R"({"mode": "ULP", "ulp_info": {"ulp": 5}})";
  EXPECT_TRUE(check(five, f32({1024.0}), std::vector<double>{1024.0 + 4 * 1024 * ulp1}).pass);
  // Beyond the type's range the reference rounds to infinity, and so must the result.
  EXPECT_TRUE(check(half, f32({INFINITY}), std::vector<double>{1e39}).pass);
  EXPECT_FALSE(check(half, f32({3.4e38}), std::vector<double>{1e39}).pass);
  EXPECT_TRUE(check(half, f32({NAN}), std::vector<double>{NAN}).pass);
  // DOT_PRODUCT and FP_SPECIAL need the bounds result; without it they are not judged here.
  EXPECT_FALSE(check(R"({"mode": "DOT_PRODUCT"})", f32({1}), std::vector<double>{1}).handled);
}

TEST(Compliance, ErrorBoundModes) {
  // ABS_ERROR: 2^-23 * max(|ref|, normal_min) * (bound + base_bound), here 2^-23 * 1 * 12 at ref 1.
  const std::string abs = R"({"mode": "ABS_ERROR", "abs_error_info": {"base_bound": 12}})";
  const double u = std::ldexp(1.0, -23);
  EXPECT_TRUE(check(abs, f32({1.0 + 11 * u}), std::vector<double>{1.0}).pass);
  EXPECT_FALSE(check(abs, f32({1.0 + 14 * u}), std::vector<double>{1.0}).pass);
  // RELATIVE: max(max * scale, ulp_bound ULPs).
  const std::string rel = R"({"mode": "RELATIVE", "relative_info": {"max": 100, "scale": 0.001, "ulp_bound": 2}})";
  EXPECT_TRUE(check(rel, f32({5.09}), std::vector<double>{5.0}).pass);   // within 0.1
  EXPECT_FALSE(check(rel, f32({5.2}), std::vector<double>{5.0}).pass);
  // REDUCE_PRODUCT: |ref| * ((1 + 2^-24)^n - 1).
  const std::string prod = R"({"mode": "REDUCE_PRODUCT", "reduce_product_info": {"n": 100}})";
  EXPECT_TRUE(check(prod, f32({1.0 + 4 * u}), std::vector<double>{1.0}).pass);  // bound about 50 * 2^-23
  EXPECT_FALSE(check(prod, f32({1.0 + 80 * u}), std::vector<double>{1.0}).pass);
  // FP_SPECIAL: signs, NaN and infinity must match; finite magnitudes are free.
  const std::string fs = R"({"mode": "FP_SPECIAL"})";
  const std::vector<double> bnd = {1, 1, 1};
  EXPECT_TRUE(check(fs, f32({INFINITY, -3, NAN}), std::vector<double>{INFINITY, -1e30, NAN}, bnd).pass);
  EXPECT_FALSE(check(fs, f32({INFINITY}), std::vector<double>{-INFINITY}, std::vector<double>{1}).pass);
  // Overflow to infinity is allowed beyond the format's range, flush to zero below it.
  const std::string half = R"({"mode": "ULP", "ulp_info": {"ulp": 0.5}})";
  EXPECT_TRUE(check(half, f32({0.0}), std::vector<double>{1e-40}).pass);
}

TEST(Compliance, DotProductPerElementAndStatistics) {
  const std::string dp = R"({"mode": "DOT_PRODUCT", "dot_product_info": {"s": 4, "ksb": 8}})";
  // Errors in units of bnd * 2^-24: at most abs_bound = 16 each; squares' mean at most 12.8.
  const double e = std::ldexp(1.0, -24);
  std::vector<double> ref(100, 1.0), bnd(100, 1.0), imp(100);
  for (size_t i = 0; i < imp.size(); ++i) imp[i] = 1.0 + (i % 2 ? 2 : -2) * e;  // +-2 units, unbiased
  EXPECT_TRUE(check(dp, f32(imp), ref, bnd).pass);
  imp[7] = 1.0 + 20 * e;  // one element beyond 16 units
  EXPECT_FALSE(check(dp, f32(imp), ref, bnd).pass);
  for (double& x : imp) x = 1.0 + 2 * e;  // 2 units every time: within each bound, but all one way
  const auto biased = check(dp, f32(imp), ref, bnd);
  EXPECT_FALSE(biased.pass);
  EXPECT_NE(biased.why.find("biased"), std::string::npos) << biased.why;
}

TEST(Conformance, SampleOfTheSuiteOnTheInterpreterAndOneDnn) {
  const fs::path tools = kShared / "tools/tosa", suite = kShared / "tosa-conformance/operators";
  if (!fs::exists(tools / "tosa_reference_model") || !fs::exists(suite))
    GTEST_SKIP() << "no TOSA reference tools or conformance suite under " << kShared << " (../shared)";
  conformance::Options options;
  options.tools_dir = tools.string();
  options.backends = {"reference"};
  options.max_input_elements = 200000;  // leaves out the few very large tests
  for (const BackendInfo& b : backends())
    if (b.name == "onednn" && b.unavailable.empty()) options.backends.push_back("onednn");
  const std::vector<std::string> tests = conformance::find_tests({suite.string()});
  ASSERT_GT(tests.size(), 6000u);
  size_t passed = 0, judged_by_weft = 0;
  for (size_t i = 0; i < tests.size(); i += 97) {
    SCOPED_TRACE(tests[i]);
    const conformance::TestResult r = conformance::run_test(tests[i], options);
    ASSERT_EQ(r.error, "");
    if (!r.skipped.empty()) continue;
    for (const conformance::BackendResult& b : r.backends) {
      EXPECT_TRUE(b.status == conformance::Status::kPass || b.status == conformance::Status::kNotTaken)
          << b.backend << ": " << conformance::status_name(b.status) << ": " << b.detail;
      EXPECT_TRUE(b.checker_agrees) << b.detail;
      passed += b.status == conformance::Status::kPass;
      judged_by_weft += b.checked_by_weft;
    }
  }
  EXPECT_GT(passed, 70u);
  EXPECT_GT(judged_by_weft, 20u);
}

}  // namespace
}  // namespace weft
