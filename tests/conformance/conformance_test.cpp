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
  // Modes without Weft's implementation are left to the verify library.
  EXPECT_FALSE(check(R"({"mode": "DOT_PRODUCT"})", f32({1}), std::vector<double>{1}).handled);
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
