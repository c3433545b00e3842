// `weft conformance DIR...`: runs TOSA conformance test folders (weft/conformance.h) on Weft's
// interpreter and backends and prints a summary per operator and profile.
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "weft/conformance.h"
#include "weft/error.h"

namespace weft::cli {

const char* const kConformanceHelp =
    R"(Usage: weft conformance DIR... [--backend LIST] [--tools DIR] [--every N] [--max-elements N]
                        [--report FILE.json] [--verbose]

Runs TOSA 1.0 conformance tests: every folder under DIR with a desc.json and its .tosa file (as
Arm's conformance generator writes them). For each test, the inputs are made from the test's
meta.data_gen by the TOSA reference model's generation library, the expected results by the
reference model (precise mode), and each backend's outputs are judged by the test's compliance mode
with the reference model's verify library and by Weft's own implementation of the specification's
rules (every mode; a disagreement is reported). Prints failures, then pass counts per operator and profile
for each backend; exit status 1 when a test fails or errs. See docs/conformance.md.

Options:
  --backend LIST      Backends to run, e.g. reference,onednn,vulkan (default: reference, Weft's
                      interpreter). A backend that does not take a test's operator counts it as
                      "not taken", not as a failure.
  --tools DIR         Folder of tosa_reference_model, libtosa_reference_generate_lib.so and
                      libtosa_reference_verify_lib.so (default: $WEFT_TOSA_TOOLS)
  --every N           Run every Nth test of the sorted list (a quick sample; default 1)
  --max-elements N    Skip tests with an input of more than N elements (counted as skipped)
  --report FILE.json  Write every test's result and the summary as JSON
  -v, --verbose       Print every test's result
  -h, --help          Show this help
)";

int cmd_conformance(Args& args) {
  std::vector<std::string> roots;
  conformance::Options options;
  if (const char* env = std::getenv("WEFT_TOSA_TOOLS")) options.tools_dir = env;
  std::string report;
  size_t every = 1;
  bool verbose = false;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      roots.push_back(positional);
    } else if (flag == "--backend") {
      options.backends.clear();
      std::stringstream ss(args.value(flag, v));
      for (std::string b; std::getline(ss, b, ',');)
        if (!b.empty()) options.backends.push_back(b);
      if (options.backends.empty()) usage_error("--backend needs at least one backend name");
    } else if (flag == "--tools") {
      options.tools_dir = args.value(flag, v);
    } else if (flag == "--every") {
      const std::string n = args.value(flag, v);
      if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos || std::stoul(n) == 0)
        usage_error("--every expects a positive integer, got '" + n + "'");
      every = std::stoul(n);
    } else if (flag == "--max-elements") {
      const std::string n = args.value(flag, v);
      if (n.empty() || n.size() > 15 || n.find_first_not_of("0123456789") != std::string::npos)
        usage_error("--max-elements expects a positive integer, got '" + n + "'");
      options.max_input_elements = std::stoll(n);
    } else if (flag == "--report") {
      report = args.value(flag, v);
    } else if (flag == "-v" || flag == "--verbose") {
      no_inline_value(args, flag, v);
      verbose = true;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kConformanceHelp;
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (roots.empty()) usage_error("`weft conformance` needs a test folder (see `weft conformance --help`)");
  std::vector<std::string> tests = conformance::find_tests(roots);
  if (tests.empty()) throw Error(ErrorCode::kNotFound, "no desc.json under the given folders");
  // summary[backend][profile][op] = {pass, fail, not taken, error}
  std::map<std::string, std::map<std::string, std::map<std::string, std::array<size_t, 4>>>> summary;
  std::map<std::string, std::array<size_t, 4>> totals;  // per backend, each test once
  size_t failures = 0, disagreements = 0, checked_by_weft = 0, run = 0, skipped = 0;
  nlohmann::json out_tests = nlohmann::json::array();
  for (size_t i = 0; i < tests.size(); i += every) {
    conformance::TestResult r = conformance::run_test(tests[i], options);
    ++run;
    const std::string op = r.op.empty() ? "?" : r.op;
    std::vector<std::string> profiles = r.profiles;
    if (profiles.empty()) profiles = {"?"};
    nlohmann::json jt = {{"test", r.dir}, {"op", op}, {"profiles", profiles}, {"modes", r.modes}};
    if (!r.skipped.empty()) {
      ++skipped;
      if (verbose) std::cout << "skipped " << r.dir << ": " << r.skipped << "\n";
      jt["skipped"] = r.skipped;
      out_tests.push_back(jt);
      continue;
    }
    if (!r.error.empty()) {
      ++failures;
      for (const std::string& b : options.backends) {
        for (const std::string& p : profiles) ++summary[b][p][op][3];
        ++totals[b][3];
      }
      std::cout << "ERROR " << r.dir << ": " << r.error << "\n";
      jt["error"] = r.error;
    }
    nlohmann::json jb = nlohmann::json::array();
    for (const conformance::BackendResult& b : r.backends) {
      for (const std::string& p : profiles) ++summary[b.backend][p][op][static_cast<size_t>(b.status)];
      ++totals[b.backend][static_cast<size_t>(b.status)];
      if (b.checked_by_weft) ++checked_by_weft;
      if (!b.checker_agrees) ++disagreements;
      const bool bad = b.status == conformance::Status::kFail || b.status == conformance::Status::kError;
      if (bad) ++failures;
      if (bad || verbose || !b.checker_agrees)
        std::cout << conformance::status_name(b.status) << " [" << b.backend << "] " << r.dir
                  << (b.detail.empty() ? "" : ": " + b.detail) << "\n";
      jb.push_back({{"backend", b.backend},
                    {"status", conformance::status_name(b.status)},
                    {"detail", b.detail},
                    {"checked_by_weft", b.checked_by_weft},
                    {"checker_agrees", b.checker_agrees}});
    }
    jt["backends"] = jb;
    out_tests.push_back(jt);
  }
  nlohmann::json js = nlohmann::json::object();
  std::cout << "\n" << run << " tests (" << tests.size() << " found";
  if (every > 1) std::cout << ", every " << every << "th";
  if (skipped) std::cout << ", " << skipped << " skipped as too large";
  std::cout << ")\n";
  for (const auto& [backend, profiles] : summary) {
    std::cout << "backend " << backend << ":\n";
    const std::array<size_t, 4>& total = totals[backend];
    for (const auto& [profile, ops] : profiles) {
      std::cout << "  " << profile << "\n";
      for (const auto& [op, c] : ops) {
        std::cout << "    " << std::left << std::setw(24) << op << std::right << " pass " << std::setw(4) << c[0]
                  << "  fail " << std::setw(3) << c[1] << "  not taken " << std::setw(3) << c[2] << "  error "
                  << std::setw(3) << c[3] << "\n";
        js[backend][profile][op] = {{"pass", c[0]}, {"fail", c[1]}, {"not_taken", c[2]}, {"error", c[3]}};
      }
    }
    std::cout << "  all tests (each once): pass " << total[0] << ", fail " << total[1] << ", not taken " << total[2] << ", error "
              << total[3] << "\n";
  }
  std::cout << "Weft's compliance checker judged " << checked_by_weft << " results and disagreed with the "
            << "verify library (where given) on " << disagreements << "\n";
  if (!report.empty()) {
    std::ofstream f(report);
    f << nlohmann::json{{"tests", out_tests},
                        {"summary", js},
                        {"checked_by_weft", checked_by_weft},
                        {"skipped", skipped},
                        {"disagreements", disagreements}}
             .dump(1)
      << "\n";
    if (!f) throw Error(ErrorCode::kIo, "cannot write the report", {.file = report});
  }
  return failures == 0 && disagreements == 0 ? kExitOk : 1;
}

}  // namespace weft::cli
