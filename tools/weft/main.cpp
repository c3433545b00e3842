// The `weft` command-line tool: run, check and format .weft models, and browse the operator table.
//
//   weft run MODEL.weft [--input NAME=FILE.npy]... [--output NAME=FILE.npy]... [--print] [--threads N]
//   weft check MODEL.weft
//   weft fmt MODEL.weft [-o OUT.weft | --check]
//   weft ops [--op NAME]
//   weft compile MODEL.weft --emit spirv -o FILE.spv        (cmd_spirv.cpp)
//   weft spirv dis|as|val ...                               (cmd_spirv.cpp)
//   weft compile MODEL.weft -o FILE.vgf; weft dump FILE.vgf  (cmd_vgf.cpp)
//
// Exit codes: 0 success, 1 a model/input/runtime error (reported as "weft: error: <Error::what()>"),
// 2 a usage error (bad flags or arguments). Arguments are parsed by hand: the grammar is small and
// this keeps every message and exit code under our control.
#include <algorithm>
#include <limits>
#include <array>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <string_view>
#include <vector>

#include "weft/dtype.h"
#include "weft/io.h"
#include "weft/custom.h"
#include "weft/error.h"
#include "weft/graph.h"
#include "weft/npy.h"
#include "weft/ops.h"
#include "weft/runtime.h"
#include "weft/tensor.h"
#include "weft/text.h"
#include "weft/verify.h"
#include "backends/backend.h"
#include "cli.h"

namespace weft::cli {

namespace {

// ---- Help texts --------------------------------------------------------------------------------

constexpr const char* kMainHelp = R"(Usage: weft <command> [options]

Weft runs and inspects ML dataflow graphs written with the TOSA 1.0 operator set.

Commands:
  run     Run a model (.weft, .vgf, .tosa or .onnx) on .npy inputs (oneDNN, Vulkan and reference backends)
  check   Verify a model and print a summary of it
  import  Import an ONNX model and write it in Weft's text form (.weft)
  fmt     Print a model in canonical text form (or check that it is canonical)
  ops     Print the TOSA operator table with type support, profiles and backends
  compile Write a model as a VGF container (-o FILE.vgf), a .tosa file or a SPIR-V graph module
  devices List the Vulkan devices that run shader nodes
  iospec  Print or check a model's IOSpec (input/output contract, sequences, latched inputs)
  stream  Run a model as a streaming target: write inputs and read outputs in IOSpec order
  conformance  Run TOSA conformance test folders (desc.json + .tosa) against the reference model
  dump    Print a VGF container as JSON (Weft's, or the layout of Arm's vgf_dump)
  scenario Write an Arm Scenario Runner scenario that runs a VGF container
  spirv   Disassemble, assemble and validate SPIR-V graph modules (dis, as, val)

Options:
  -h, --help       Show this help (or `weft <command> --help`, `weft help <command>`)
  -V, --version    Show the version

Exit status: 0 success, 1 model or input error, 2 usage error.
)";

constexpr const char* kRunHelp =
    R"(Usage: weft run MODEL.weft|MODEL.vgf|MODEL.onnx [--input NAME=FILE.npy]... [--output NAME=FILE.npy]...
                [--print] [--threads N] [--stats] [--shape NAME=DIMS]... [--backend LIST]
                [--explain] [--profile] [--profile-kernels N|all] [--repeat N] [--scratchpad arena|library] [--nan-exact]
                [--custom-ops FILE]... [--device SEL] [--precision fp32|fp16] [--max-loop-iterations N]
                [--deadline-ms MS] [--max-memory BYTES]

Loads and verifies MODEL, reads every input of its entry graph from a .npy file, runs it with
the runtime (partitioned between backends, planned memory) and writes or prints the outputs. An
ONNX model is imported first; its int64 inputs are carried as int32 (int64 .npy files are
accepted and range-checked) and its int64 outputs are written as int32.

Options:
  -i, --input NAME=FILE.npy    Input NAME of the entry graph (one per input; all are required)
  -o, --output NAME=FILE.npy   Write output NAME to FILE (repeatable)
  -p, --print                  Print the outputs (the default when no --output is given)
  -t, --threads N              Threads for every kernel, oneDNN's and Weft's (0 = all cores; default 1;
                               at most 1024)
  --max-loop-iterations N      Stop a WHILE_LOOP after N iterations with an error naming it (default: none)
  --deadline-ms MS             Stop a run that takes longer than MS milliseconds (checked between
                               kernels and in loops; default: none)
  --max-memory BYTES           Refuse a model whose intermediates and outputs need more memory than
                               this, before allocating (suffixes K, M, G: binary; default: this
                               machine's physical memory)
  -s, --stats                  Print the memory plan: peak arena bytes against the sum of all
                               intermediate sizes, the largest kernel workspace, in-place nodes,
                               output and constant bytes, and weights prepared by backends
  --shape NAME=DIMS            Static shape of an ONNX input with dynamic dimensions, e.g.
                               --shape input=1x3x224x224 (repeatable)
  --bind NAME=FILE.npy         Bind ONNX graph input NAME to a value at compile time (a constant, so
                               that inputs feeding shapes, axes, pads or scales fold; repeatable)
  --narrow-float64             Carry ONNX float64 tensors as float32 (named in --explain)
  --max-fold-bytes N           ONNX constant-folding budget per folded result (default 256 MiB)
  --backend LIST               Backends in priority order, e.g. vulkan,reference: each takes what it
                               can, in that order (default: every available backend, fastest first,
                               with tiny operators left to the reference loops and TOSA operators off
                               CPU Vulkan devices; reference is always the last resort). cpu: the CPU
                               backends with those default rules, as a machine without a GPU runs
  --explain                    Print which backend runs each node or fused group, and for every
                               node not offloaded, why
  --repeat N                   Run N times after one warm-up run and print the latency (median,
                               min, mean); the outputs are those of the last run
  --profile                    Print where the time goes: per fused pattern and backend, and the
                               slowest kernels (over the --repeat runs)
  --profile-kernels N|all      How many of the slowest kernels --profile lists (default 12; implies
                               --profile)
  --scratchpad arena|library   Where oneDNN's scratch memory comes from: the context's arena
                               (default) or oneDNN's own allocations (for comparison)
  --nan-exact                  Keep nodes whose NaN/-inf results a backend would not give exactly
                               as TOSA specifies (nan_mode; oneDNN's max/min/clamp/pooling, EXP,
                               softmax) on the reference backend
  --custom-ops FILE            Register the custom operators of an ops file (JSON, docs/custom-ops.md):
                               matching ONNX nodes and .weft CUSTOM nodes become shader nodes (repeatable)
  --device SEL                 Vulkan device for shader nodes: an index or part of a name from
                               `weft devices` (default: $WEFT_VULKAN_DEVICE, else the first GPU)
  --precision fp32|fp16        fp16: run an fp32 model in reduced precision, for GPUs (fp16 tensors
                               and weights, fp32 accumulators where TOSA has the choice, fp32 inputs
                               and outputs; --explain says what changed). Results differ from fp32
                               by fp16 rounding. Without a GPU the fp16 operators run on the
                               reference loops. Default fp32
  -h, --help                   Show this help
)";

constexpr const char* kCheckHelp = R"(Usage: weft check MODEL.weft|MODEL.vgf|MODEL.onnx [--shape NAME=DIMS]... [--custom-ops FILE]...
                  [--max-fold-bytes N]

Verifies MODEL (structure, types, shapes and every TOSA ERROR_IF rule; the payload and resource
contract of every custom shader node, with --custom-ops filling in registered ones) and prints a summary:
entry graph, inputs, outputs, operator counts, nodes, constant bytes, graphs and profiles.
Exits with status 1 and lists every diagnostic when the model is invalid.
)";

constexpr const char* kFmtHelp = R"(Usage: weft fmt MODEL.weft [-o OUT.weft | --check]

Prints MODEL in canonical text form to stdout.

Options:
  -o, --output OUT.weft   Save the canonical form to OUT (large constants go to .npy files beside it)
  --check                 Print nothing; exit with status 1 if MODEL is not in canonical form
  -h, --help              Show this help
)";

constexpr const char* kOpsHelp = R"(Usage: weft ops [--op NAME] [--backends]

Prints the TOSA 1.0 operator table: each operator's operands and attributes and, for each
supported type combination, its mode, the type variables it binds, the profiles or extensions
that enable it and the backends that run it (alone or as the main node of a fused group; a
backend may still decline a particular node, see `weft run --explain`).

Options:
  --op NAME     Only this operator (e.g. CONV2D; case does not matter)
  --backends    List the backends of this build in default priority order, with whether each
                is usable on this machine
  -h, --help    Show this help
)";

// "NAME=FILE" of --input / --output.
std::pair<std::string, std::string> split_binding(const std::string& flag, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
    usage_error("option " + flag + " expects NAME=FILE.npy, got '" + v + "'");
  }
  std::string name = v.substr(0, eq);
  if (name[0] == '%') name.erase(0, 1);  // accept the text form's sigil: --input %image=x.npy
  return {name, v.substr(eq + 1)};
}

int parse_threads(const std::string& v) {
  if (v.empty() || v.size() > 6 || !std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c); })) {
    usage_error("--threads expects a non-negative integer, got '" + v + "'");
  }
  return std::stoi(v);
}

// A byte count: digits with an optional binary suffix K, M, G or T (1K = 1024), at least 1.
size_t parse_bytes(const std::string& flag, const std::string& v) {
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  const std::string suffix = v.substr(digits);
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GiB") shift = 30;
  else if (suffix == "T" || suffix == "TiB") shift = 40;
  if (digits == 0 || digits > 15 || shift < 0)
    usage_error(flag + " expects a number of bytes with an optional suffix K, M, G or T, got '" + v + "'");
  const unsigned long long n = std::stoull(v.substr(0, digits));
  if (n == 0) usage_error(flag + " must be at least 1 byte, got '" + v + "'");
  if (n > (std::numeric_limits<size_t>::max() >> shift)) usage_error(flag + " is too large: '" + v + "'");
  return static_cast<size_t>(n) << shift;
}

// ---- Formatting helpers --------------------------------------------------------------------------

std::string human_bytes(size_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", n);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string format_element(const Tensor& t, int64_t i) {
  DType d = t.dtype();
  if (d == DType::kBool) return t.at_int(i) ? "True" : "False";
  if (is_float(d)) return format_double(t.at_double(i));
  return std::to_string(t.at_int(i));
}

// numpy-like nested brackets. Tensors of more than kSummaryThreshold elements are summarised:
// along an axis longer than 2 * edge only the first and last `edge` entries are shown, with
// "..." between. The edge starts at kEdgeItems (numpy's default) and shrinks on the outer axes
// first until roughly kSummaryShown elements remain, so that a [2,3,4,5] tensor stays short.
constexpr int64_t kSummaryThreshold = 20;
constexpr int64_t kSummaryShown = 30;
constexpr int64_t kEdgeItems = 3;

class TensorPrinter {
 public:
  explicit TensorPrinter(const Tensor& t) : t_(t), summarize_(t.num_elements() > kSummaryThreshold) {
    const Shape& s = t.shape();
    const int rank = t.rank();
    strides_.assign(s.size(), 1);
    for (int i = rank - 2; i >= 0; --i) strides_[i] = strides_[i + 1] * s[i + 1];
    edge_.assign(s.size(), kEdgeItems);
    if (summarize_) {
      for (int axis = 0; axis < rank; ++axis) {
        const int64_t min_edge = axis == rank - 1 ? 2 : 1;
        while (edge_[axis] > min_edge && shown_count() > kSummaryShown) --edge_[axis];
      }
    }
    // Pad every shown element to the same width so columns line up.
    collect_width(0, 0);
  }

  std::string str() {
    if (t_.rank() == 0) return format_element(t_, 0);
    out_.clear();
    print(0, 0);
    return out_;
  }

 private:
  bool elided(int axis) const { return summarize_ && t_.shape()[axis] > 2 * edge_[axis]; }
  int64_t shown_count() const {
    int64_t n = 1;
    for (int axis = 0; axis < t_.rank(); ++axis) n *= elided(axis) ? 2 * edge_[axis] : t_.shape()[axis];
    return n;
  }
  std::vector<int64_t> shown(int axis) const {
    int64_t n = t_.shape()[axis];
    std::vector<int64_t> idx;
    if (elided(axis)) {
      for (int64_t i = 0; i < edge_[axis]; ++i) idx.push_back(i);
      idx.push_back(-1);  // the "..." marker
      for (int64_t i = n - edge_[axis]; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }
  void collect_width(int axis, int64_t offset) {
    if (axis == t_.rank()) {
      width_ = std::max(width_, format_element(t_, offset).size());
      return;
    }
    for (int64_t i : shown(axis)) {
      if (i >= 0) collect_width(axis + 1, offset + i * strides_[axis]);
    }
  }
  void print(int axis, int64_t offset) {
    const int rank = t_.rank();
    out_ += '[';
    std::vector<int64_t> idx = shown(axis);
    for (size_t k = 0; k < idx.size(); ++k) {
      if (k) {
        out_ += ',';
        if (axis == rank - 1) {
          out_ += ' ';
        } else {
          // numpy: one newline between rows, an extra blank line per further axis level.
          out_.append(static_cast<size_t>(rank - 1 - axis), '\n');
          out_.append(static_cast<size_t>(axis + 1), ' ');
        }
      }
      if (idx[k] < 0) {
        out_ += "...";
        continue;
      }
      int64_t off = offset + idx[k] * strides_[axis];
      if (axis == rank - 1) {
        std::string e = format_element(t_, off);
        out_.append(width_ - e.size(), ' ');
        out_ += e;
      } else {
        print(axis + 1, off);
      }
    }
    out_ += ']';
  }

  const Tensor& t_;
  bool summarize_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> edge_;
  size_t width_ = 0;
  std::string out_;
};

void print_tensor(std::ostream& os, const std::string& name, const Tensor& t) {
  os << "%" << name << ": " << t.type().str() << "\n";
  if (t.num_elements() == 0) {
    os << "[]  (empty)\n";
    return;
  }
  os << TensorPrinter(t).str() << "\n";
  if (is_float(t.dtype())) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t finite_or_inf = 0, nans = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      double v = t.at_double(i);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++finite_or_inf;
    }
    if (finite_or_inf > 0) {
      os << "min " << format_double(lo) << "  max " << format_double(hi) << "  mean "
         << format_double(sum / static_cast<double>(finite_or_inf));
    } else {
      os << "all values are NaN";
    }
    if (nans > 0 && finite_or_inf > 0) os << "  (" << nans << " NaN)";
    os << "\n";
  }
}

std::string names_list(const std::vector<IoInfo>& list, bool with_types) {
  std::string r;
  for (const IoInfo& v : list) {
    r += "\n  " + v.name;
    if (with_types) r += ": " + v.type.str();
  }
  return r.empty() ? "\n  (none)" : r;
}

// ---- weft run ------------------------------------------------------------------------------------

// Where the time of a run goes: per (backend, pattern), then the slowest kernels. `total` holds
// the sums over `runs` runs; times are printed per run.
// `listed`: how many of the slowest kernels to list (SIZE_MAX: all).
void print_profile(std::ostream& os, const std::vector<KernelProfile>& total, int runs, double mean_ms, size_t listed) {
  struct Row {
    double us = 0;
    int count = 0;
  };
  std::map<std::pair<std::string, std::string>, Row> by_pattern, device_by_op;
  double kernels_us = 0, device_us = 0;
  size_t kernels = 0;
  for (const KernelProfile& k : total) {
    if (k.device) {
      Row& r = device_by_op[{k.backend, k.pattern}];
      r.us += k.microseconds / runs;
      ++r.count;
      device_us += k.microseconds / runs;
      continue;
    }
    ++kernels;
    Row& r = by_pattern[{k.backend, k.pattern}];
    r.us += k.microseconds / runs;
    ++r.count;
    kernels_us += k.microseconds / runs;
  }
  std::vector<std::pair<double, std::pair<std::string, std::string>>> rows;
  for (const auto& [key, r] : by_pattern) rows.push_back({r.us, key});
  std::sort(rows.rbegin(), rows.rend());
  os << std::fixed << std::setprecision(3);
  os << "profile: " << kernels << " kernels, " << kernels_us / 1000 << " ms in kernels of " << mean_ms
     << " ms per run (the rest is the runtime's own work: binding, zero-filling, dispatch)\n";
  os << "  " << std::left << std::setw(10) << "backend" << std::setw(34) << "pattern" << std::right << std::setw(7)
     << "count" << std::setw(11) << "ms" << std::setw(8) << "%" << "\n";
  for (const auto& [us, key] : rows) {
    os << "  " << std::left << std::setw(10) << key.first << std::setw(34) << key.second << std::right << std::setw(7)
       << by_pattern[key].count << std::setw(11) << us / 1000 << std::setw(7) << std::setprecision(1)
       << (kernels_us > 0 ? 100 * us / kernels_us : 0) << "%" << std::setprecision(3) << "\n";
  }
  if (!device_by_op.empty()) {
    // GPU time per operator inside device regions, from timestamp queries.
    std::vector<std::pair<double, std::pair<std::string, std::string>>> drows;
    for (const auto& [key, r] : device_by_op) drows.push_back({r.us, key});
    std::sort(drows.rbegin(), drows.rend());
    os << "device time (timestamp queries): " << device_us / 1000 << " ms per run\n";
    os << "  " << std::left << std::setw(10) << "device" << std::setw(34) << "operator" << std::right << std::setw(7)
       << "count" << std::setw(11) << "ms" << std::setw(8) << "%" << "\n";
    for (const auto& [us, key] : drows)
      os << "  " << std::left << std::setw(10) << key.first << std::setw(34) << key.second << std::right << std::setw(7)
         << device_by_op[key].count << std::setw(11) << us / 1000 << std::setw(7) << std::setprecision(1)
         << (device_us > 0 ? 100 * us / device_us : 0) << "%" << std::setprecision(3) << "\n";
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < total.size(); ++i) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total[a].microseconds > total[b].microseconds; });
  os << "slowest kernels:\n";
  for (size_t i = 0; i < order.size() && i < listed; ++i) {
    const KernelProfile& k = total[order[i]];
    os << "  " << std::setw(9) << k.microseconds / runs / 1000 << " ms  " << k.backend << " " << k.pattern << " ("
       << k.node << ")" << (k.implementation.empty() ? "" : " [" + k.implementation + "]") << "\n";
  }
  os << std::defaultfloat;
}

int cmd_run(Args& args) {
  std::string model_path;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  bool print = false, stats = false, explain = false, profile = false;
  size_t profile_kernels = 12;  // --profile-kernels
  int threads = 1, repeat = 0;
  int64_t max_loop_iterations = 0;
  double deadline_ms = 0;
  size_t max_memory = 0;
  LoadOptions load = cli_load_options();
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> inline_value;
    args.next(&flag, &inline_value, &positional);
    if (flag.empty()) {
      if (!model_path.empty())
        usage_error("`weft run` takes one model, got '" + model_path + "' and '" + positional + "'");
      model_path = positional;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kRunHelp;
      return kExitOk;
    } else if (flag == "-i" || flag == "--input") {
      inputs.push_back(split_binding(flag, args.value(flag, inline_value)));
    } else if (flag == "-o" || flag == "--output") {
      outputs.push_back(split_binding(flag, args.value(flag, inline_value)));
    } else if (flag == "-p" || flag == "--print") {
      no_inline_value(args, flag, inline_value);
      print = true;
    } else if (flag == "-s" || flag == "--stats") {
      no_inline_value(args, flag, inline_value);
      stats = true;
    } else if (flag == "-t" || flag == "--threads") {
      threads = parse_threads(args.value(flag, inline_value));
    } else if (flag == "--max-loop-iterations") {
      const std::string v = args.value(flag, inline_value);
      if (v.empty() || v.size() > 15 || !std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c); }))
        usage_error("--max-loop-iterations expects a positive integer, got '" + v + "'");
      max_loop_iterations = std::stoll(v);
    } else if (flag == "--deadline-ms") {
      const std::string v = args.value(flag, inline_value);
      char* end = nullptr;
      deadline_ms = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(deadline_ms > 0) || deadline_ms > 1e12)
        usage_error("--deadline-ms expects a positive number of milliseconds, got '" + v + "'");
    } else if (flag == "--max-memory") {
      max_memory = parse_bytes("--max-memory", args.value(flag, inline_value));
    } else if (onnx_import_option(args, flag, inline_value, load)) {
    } else if (flag == "--max-fold-bytes") {
      add_max_fold_option(load, args.value(flag, inline_value));
    } else if (flag == "--backend") {
      add_backend_option(load, args.value(flag, inline_value));
    } else if (flag == "--explain") {
      no_inline_value(args, flag, inline_value);
      explain = true;
    } else if (flag == "--profile") {
      no_inline_value(args, flag, inline_value);
      profile = true;
    } else if (flag == "--profile-kernels") {
      const std::string v = args.value(flag, inline_value);
      if (v == "all") {
        profile_kernels = SIZE_MAX;
      } else if (v.empty() || v.size() > 7 || v.find_first_not_of("0123456789") != std::string::npos) {
        usage_error("--profile-kernels expects a count or 'all', got '" + v + "'");
      } else {
        profile_kernels = static_cast<size_t>(std::stoul(v));
      }
      profile = true;
    } else if (flag == "--repeat") {
      std::string v = args.value(flag, inline_value);
      if (v.empty() || v.size() > 7 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 1)
        usage_error("--repeat expects a positive integer, got '" + v + "'");
      repeat = std::stoi(v);
    } else if (flag == "--nan-exact") {
      no_inline_value(args, flag, inline_value);
      load.backend.nan_exact = true;
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, inline_value));
    } else if (flag == "--device") {
      load.backend.device = args.value(flag, inline_value);
    } else if (flag == "--precision") {
      const std::string v = args.value(flag, inline_value);
      if (v != "fp32" && v != "fp16") usage_error("--precision expects 'fp32' or 'fp16', got '" + v + "'");
      load.backend.precision = v == "fp16" ? Precision::kFp16 : Precision::kFp32;
    } else if (flag == "--scratchpad") {
      std::string v = args.value(flag, inline_value);
      if (v != "arena" && v != "library") usage_error("--scratchpad expects 'arena' or 'library', got '" + v + "'");
      load.backend.library_scratchpad = v == "library";
    } else {
      unknown_option(args, flag);
    }
  }
  if (model_path.empty()) usage_error("`weft run` needs a model file (see `weft run --help`)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (inputs[i].first == inputs[j].first) usage_error("input '" + inputs[i].first + "' is given twice");
    }
  }

  std::shared_ptr<const Model> model = Model::load(model_path, load);
  if (model->is_dynamic()) {
    // Dimensions the model leaves open take the sizes of the given arrays (as --shape would).
    for (const IoInfo& in : model->inputs()) {
      auto it = std::find_if(inputs.begin(), inputs.end(), [&](const auto& p) { return p.first == in.name; });
      if (it == inputs.end()) continue;  // reported as missing below
      try {
        load.onnx.input_shapes[in.name] =
            (in.is_unsigned ? read_npy_unsigned(it->second, in.type.dtype) : read_npy(it->second)).shape();
      } catch (const Error& e) {
        throw e.with_context({.operand = in.name});
      }
    }
    model = Model::load(model_path, load);
    if (model->is_dynamic()) {
      std::string list;
      for (const IoInfo& in : model->inputs()) list += (list.empty() ? "" : ", ") + in.name + " " + in.type.str();
      model_error(model_path + ": missing inputs with dimensions open in the model; it expects: " + list +
                  "\ngive each as --input NAME=FILE.npy");
    }
  }
  // The interface from the model, not its module: asking for the module keeps every constant in
  // memory, where a model otherwise drops those its backends copied (src/core/reloadable.h).
  const std::vector<IoInfo>& ins = model->inputs();
  const std::vector<IoInfo>& outs = model->outputs();
  auto has = [](const std::vector<IoInfo>& list, const std::string& name) {
    return std::any_of(list.begin(), list.end(), [&](const IoInfo& i) { return i.name == name; });
  };
  if (explain) std::cout << model->explain();

  // Names first, so that every naming mistake is reported before any file is read.
  std::map<std::string, std::string> input_files;
  for (const auto& [name, file] : inputs) {
    if (!has(ins, name)) {
      model_error(model_path + ": the model has no input named '" + name + "'; its inputs are:" + names_list(ins, true));
    }
    input_files[name] = file;
  }
  std::vector<std::string> missing;
  for (const IoInfo& in : ins) {
    if (!input_files.count(in.name)) missing.push_back(in.name);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    model_error(model_path + ": missing input" + (missing.size() > 1 ? "s " : " ") + list +
                "; the model expects:" + names_list(ins, true) +
                "\ngive each as --input NAME=FILE.npy");
  }
  for (const auto& [name, file] : outputs) {
    if (!has(outs, name)) {
      model_error(model_path + ": the model has no output named '" + name + "'; its outputs are:" + names_list(outs, true));
    }
  }

  std::vector<Tensor> in_tensors;
  for (const IoInfo& info : ins) {
    const std::string& file = input_files.at(info.name);
    Tensor t;
    try {
      if (info.is_unsigned) {
        t = read_npy_unsigned(file, info.type.dtype);  // uint8/uint16/uint32 data in the carrier's bits
      } else if (t = read_npy(file); t.dtype() == DType::kInt48 && info.type.dtype == DType::kInt32) {
        // int64 data for an input carried as int32 (ONNX int64): converted when every value fits.
        Tensor n = Tensor::zeros({DType::kInt32, t.shape()});
        for (int64_t i = 0; i < t.num_elements(); ++i) {
          const int64_t x = t.at_int(i);
          if (x < INT32_MIN || x > INT32_MAX)
            model_error("input '" + info.name + "': " + file + " holds int64 value " + std::to_string(x) + " at flat index " +
                        std::to_string(i) + ", outside the int32 range the model carries it in");
          n.mutable_data<int32_t>()[i] = static_cast<int32_t>(x);
        }
        t = n;
      } else if (t.dtype() != info.type.dtype) {
        t = read_npy(file, info.type.dtype);  // reports the mismatch in the reader's words
      }
    } catch (const Error& e) {
      throw e.with_context({.operand = info.name});  // say which input the file was meant for
    }
    if (t.shape() != info.type.shape) {
      model_error("input '" + info.name + "': " + file + " holds " + t.type().str() + ", the model expects " +
                  info.type.str());
    }
    in_tensors.push_back(std::move(t));
  }

  Context ctx(model, {.threads = threads,
                      .max_loop_iterations = max_loop_iterations,
                      .deadline_ms = deadline_ms,
                      .max_memory_bytes = max_memory});
  std::vector<Tensor> results = ctx.run(in_tensors);  // the warm-up when repeating
  if (repeat > 0 || profile) {
    const int runs = std::max(repeat, 1);
    ctx.set_profiling(profile);
    std::vector<double> ms;
    std::vector<KernelProfile> total;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      results = ctx.run(in_tensors);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      const auto& p = ctx.profile();
      if (total.empty()) total = p;
      else
        for (size_t i = 0; i < p.size() && i < total.size(); ++i) total[i].microseconds += p[i].microseconds;
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double x : ms) mean += x / runs;
    std::cout << std::fixed << std::setprecision(3) << "latency: median_ms=" << sorted[sorted.size() / 2]
              << " min_ms=" << sorted.front() << " mean_ms=" << mean << " runs=" << runs << " threads=" << threads
              << std::defaultfloat << "\n";
    if (profile) print_profile(std::cout, total, runs, mean, profile_kernels);
  }

  std::map<std::string, const Tensor*> by_name;
  for (size_t i = 0; i < results.size(); ++i) by_name[outs[i].name] = &results[i];
  auto out_info = [&](const std::string& name) -> const IoInfo& { return model->outputs()[model->output_index(name)]; };
  for (const auto& [name, file] : outputs) {
    if (out_info(name).is_unsigned) write_npy_unsigned(file, *by_name.at(name));
    else write_npy(file, *by_name.at(name));
  }
  if (stats) {
    const MemoryStats& st = model->memory_stats();
    std::cout << "memory plan: arena " << st.arena_bytes << " bytes peak for " << st.intermediates
              << " intermediates of " << st.intermediate_bytes << " bytes in all and kernel workspaces of up to "
              << st.workspace_bytes << " bytes";
    std::cout << "; " << st.in_place_nodes << " nodes in place; outputs " << st.output_bytes << " bytes; constants "
              << st.constant_bytes << " bytes used in place; " << st.prepared_bytes
              << " bytes of weights prepared by backends; " << st.released_constant_bytes
              << " bytes of constants released once copied\n";
  }
  if (print || outputs.empty()) {
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) std::cout << "\n";
      const std::string& name = outs[i].name;
      if (out_info(name).is_unsigned && results[i].dtype() != DType::kInt32) {
        // uint8/uint16 bits printed as their unsigned values
        const int64_t mask = results[i].dtype() == DType::kInt8 ? 0xFF : 0xFFFF;
        std::vector<int64_t> vals(static_cast<size_t>(results[i].num_elements()));
        for (size_t k = 0; k < vals.size(); ++k) vals[k] = results[i].at_int(static_cast<int64_t>(k)) & mask;
        print_tensor(std::cout, name, Tensor::from_ints({DType::kInt32, results[i].shape()}, vals));
      } else {
        print_tensor(std::cout, name, results[i]);
      }
    }
  }
  return kExitOk;
}

// ---- weft check ----------------------------------------------------------------------------------

int cmd_check(Args& args) {
  std::string model_path;
  LoadOptions load = cli_load_options();
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> inline_value;
    args.next(&flag, &inline_value, &positional);
    if (flag.empty()) {
      if (!model_path.empty())
        usage_error("`weft check` takes one model, got '" + model_path + "' and '" + positional + "'");
      model_path = positional;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kCheckHelp;
      return kExitOk;
    } else if (onnx_import_option(args, flag, inline_value, load)) {
    } else if (flag == "--max-fold-bytes") {
      add_max_fold_option(load, args.value(flag, inline_value));
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, inline_value));
    } else {
      unknown_option(args, flag);
    }
  }
  if (model_path.empty()) usage_error("`weft check` needs a model file (see `weft check --help`)");

  Module module = read_model(model_path, load);
  // Custom shader nodes: payloads validated (and registered ones filled in, GLSL compiled) and
  // resource contracts checked, as `weft compile` would.
  custom::PrepareStats custom_stats;
  try {
    custom_stats = custom::prepare_module(module, model_path);
  } catch (const Error& e) {
    throw e.with_context({.file = model_path});
  }
  std::vector<Error> diagnostics = verify_module(module);
  if (!diagnostics.empty()) {
    std::cerr << "weft: error: " << model_path << " is invalid: " << diagnostics.size() << " diagnostic"
              << (diagnostics.size() > 1 ? "s" : "") << "\n";
    for (const Error& e : diagnostics) std::cerr << "  " << e.what() << "\n";
    return kExitError;
  }

  const Graph& g = module.main();
  std::map<std::string, int> op_counts;
  size_t nodes = 0, const_bytes = 0;
  for (const Graph& graph : module.graphs()) {
    for (const Node& n : graph.nodes()) ++op_counts[op_name(n.op)];
    nodes += graph.nodes().size();
    const_bytes += graph.constant_bytes();
  }
  std::ostream& os = std::cout;
  os << model_path << ": ok\n";
  os << "entry graph: @" << g.name() << "\n";
  os << "inputs:\n";
  for (ValueId id : g.inputs()) os << "  %" << g.value(id).name << ": " << g.value(id).type.str() << "\n";
  if (g.inputs().empty()) os << "  (none)\n";
  os << "outputs:\n";
  for (ValueId id : g.outputs()) os << "  %" << g.value(id).name << ": " << g.value(id).type.str() << "\n";
  os << "operators:\n";
  size_t width = 0;
  for (const auto& [name, count] : op_counts) width = std::max(width, name.size());
  for (const auto& [name, count] : op_counts) {
    os << "  " << name << std::string(width - name.size() + 2, ' ') << count << "\n";
  }
  os << "nodes: " << nodes << "\n";
  if (op_counts.count("CUSTOM"))
    os << "custom shader nodes: " << custom_stats.checked << " checked (payload and resource contract), "
       << op_counts["CUSTOM"] - custom_stats.checked << " without a shader payload\n";
  os << "constant bytes: " << const_bytes << " (" << human_bytes(const_bytes) << ")\n";
  os << "graphs: " << module.graphs().size() << "\n";
  os << "profiles: " << (module.profiles() == kAllProfiles ? "all (" : "")
     << profile_set_str(module.profiles()) << (module.profiles() == kAllProfiles ? ")" : "") << "\n";
  return kExitOk;
}

// ---- weft fmt ------------------------------------------------------------------------------------


int cmd_fmt(Args& args) {
  std::string model_path, out_path;
  bool check = false;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> inline_value;
    args.next(&flag, &inline_value, &positional);
    if (flag.empty()) {
      if (!model_path.empty())
        usage_error("`weft fmt` takes one model, got '" + model_path + "' and '" + positional + "'");
      model_path = positional;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kFmtHelp;
      return kExitOk;
    } else if (flag == "-o" || flag == "--output") {
      out_path = args.value(flag, inline_value);
    } else if (flag == "--check") {
      no_inline_value(args, flag, inline_value);
      check = true;
    } else {
      unknown_option(args, flag);
    }
  }
  if (model_path.empty()) usage_error("`weft fmt` needs a model file (see `weft fmt --help`)");
  if (check && !out_path.empty()) usage_error("`weft fmt` takes either --check or -o, not both");

  Module module = load_weft(model_path);
  if (check) {
    std::string original = read_file(model_path);
    std::string canonical = print_weft(module);
    if (original == canonical) return kExitOk;
    // Point at the first line that differs, so the user sees what fmt would change.
    std::istringstream a(original), b(canonical);
    std::string la, lb;
    int line = 0;
    while (true) {
      ++line;
      bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
      if (!ha && !hb) break;
      if (!ha || !hb || la != lb) break;
    }
    std::cerr << "weft: " << model_path << " is not in canonical form (first difference at line " << line
              << "); run `weft fmt " << model_path << " -o " << model_path << "`\n";
    return kExitError;
  }
  if (!out_path.empty()) {
    save_weft(module, out_path);
  } else {
    std::cout << print_weft(module);
  }
  return kExitOk;
}

// ---- weft ops ------------------------------------------------------------------------------------

// The backends of this build that run a row of the operator table (alone or as the main node of
// a fused group), each answering from its own capabilities.
std::vector<std::string> backends_supporting(const OpDef& def, const TypeSupport& row) {
  std::vector<std::string> r;
  for (const backend::Backend* b : backend::all_backends()) {
    if (b->runs_row(def, row)) r.emplace_back(b->name());
  }
  return r;
}

std::string arg_str(const ArgDef& a) {
  std::string r = std::string(a.name) + ": ";
  switch (a.kind) {
    case ArgKind::kTensor: r += a.elem; break;
    case ArgKind::kTensorList: return r + "tensor list";
    case ArgKind::kShape: r += "shape_t"; break;
  }
  // The spec's shape expression: "[N,IH,IW,C]" as is, a named shape ("shape1") in brackets.
  std::string_view shape = a.shape;
  if (!shape.empty()) r += shape.front() == '[' ? std::string(shape) : "[" + std::string(shape) + "]";
  return r;
}

std::string attr_str(const AttrDef& a) {
  std::string r = std::string(a.name) + ": ";
  switch (a.kind) {
    case AttrKind::kInt: r += "i32"; break;
    case AttrKind::kBool: r += "bool"; break;
    case AttrKind::kIntList:
      r += "i32[";
      r += a.length >= 0 ? std::to_string(a.length) : a.length == kLenRankOfInput0 ? "rank(input)" : "*";
      r += "]";
      break;
    case AttrKind::kAccType: r += "acc_type"; break;
    case AttrKind::kNanMode: r += "nan_mode"; break;
    case AttrKind::kResizeMode: r += "resize_mode"; break;
    case AttrKind::kRoundingMode: r += "rounding_mode"; break;
    case AttrKind::kVarType: r += "var_t"; break;
    case AttrKind::kScalar: r += std::string(a.elem) + " scalar"; break;
    case AttrKind::kTensor: r += std::string(a.elem) + " tensor"; break;
    case AttrKind::kShapeValues: r += "shape values"; break;
    case AttrKind::kString: r += "string"; break;
    case AttrKind::kGraph: r += "graph"; break;
  }
  return r;
}

template <class T, class F>
std::string join(std::span<const T> items, F f, const char* sep = ", ") {
  std::string r;
  for (const T& x : items) {
    if (!r.empty()) r += sep;
    r += f(x);
  }
  return r.empty() ? "-" : r;
}

void print_op(std::ostream& os, const OpDef& def) {
  os << def.name << "  (" << def.group;
  if (def.spirv_opcode >= 0) os << ", TOSA.001000.1 opcode " << def.spirv_opcode;
  os << ")\n";
  os << "  inputs:  " << join(def.inputs, arg_str) << "\n";
  os << "  attrs:   " << join(def.attrs, attr_str) << "\n";
  os << "  outputs: " << join(def.outputs, arg_str) << "\n";
  if (def.types.empty()) {
    os << "  types:   any\n";
    return;
  }
  // Rows as aligned columns: mode | bindings | profiles | backends.
  std::vector<std::array<std::string, 4>> rows;
  for (const TypeSupport& row : def.types) {
    std::string binds;
    for (size_t i = 0; i < def.type_vars.size(); ++i) {
      if (i) binds += " ";
      binds += std::string(def.type_vars[i]) + "=" + dtype_name(row.types[i]);
    }
    if (binds.empty()) binds = "-";
    std::string profiles;
    for (ProfileSet alt : row.any_of) {
      if (!alt) break;
      if (!profiles.empty()) profiles += " or ";
      profiles += profile_set_str(alt);
    }
    std::string be;
    for (const std::string& b : backends_supporting(def, row)) be += (be.empty() ? "" : ",") + b;
    rows.push_back({row.mode, binds, profiles, be.empty() ? "none" : be});
  }
  size_t w[3] = {0, 0, 0};
  for (const auto& r : rows) {
    for (int c = 0; c < 3; ++c) w[c] = std::max(w[c], r[c].size());
  }
  os << "  types:\n";
  for (const auto& r : rows) {
    os << "    " << r[0] << std::string(w[0] - r[0].size() + 2, ' ') << r[1]
       << std::string(w[1] - r[1].size() + 2, ' ') << r[2] << std::string(w[2] - r[2].size() + 2, ' ')
       << "backends: " << r[3] << "\n";
  }
}

int cmd_ops(Args& args) {
  std::optional<std::string> only;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> inline_value;
    args.next(&flag, &inline_value, &positional);
    if (flag.empty()) {
      usage_error("unexpected argument '" + positional + "' for `weft ops` (use --op NAME)");
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kOpsHelp;
      return kExitOk;
    } else if (flag == "--op") {
      only = args.value(flag, inline_value);
    } else if (flag == "--backends") {
      no_inline_value(args, flag, inline_value);
      for (const BackendInfo& b : weft::backends())
        std::cout << b.name << (b.unavailable.empty() ? "" : " (not available here: " + b.unavailable + ")") << "\n    "
                  << b.description << "\n";
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (only) {
    std::string upper = *only;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper.rfind("TOSA.", 0) == 0) upper.erase(0, 5);
    auto op = op_from_name(upper);
    if (!op) {
      std::string similar;
      for (const OpDef& d : all_op_defs()) {
        if (std::string(d.name).find(upper) != std::string::npos)
          similar += std::string(similar.empty() ? "" : ", ") + d.name;
      }
      usage_error(
          "unknown operator '" + *only + "'" +
          (similar.empty() ? std::string("; `weft ops` lists all") : "; did you mean " + similar + "?"));
    }
    print_op(std::cout, op_def(*op));
    return kExitOk;
  }
  std::cout << "TOSA 1.0 operators (" << kNumOps << "); backends: ";
  const auto& all = backend::all_backends();
  for (size_t i = 0; i < all.size(); ++i) std::cout << (i ? ", " : "") << all[i]->name();
  std::cout << "\n";
  for (const OpDef& def : all_op_defs()) {
    std::cout << "\n";
    print_op(std::cout, def);
  }
  return kExitOk;
}

// ---- main ----------------------------------------------------------------------------------------

using Command = int (*)(Args&);

const std::map<std::string, std::pair<Command, const char*>>& commands() {
  static const std::map<std::string, std::pair<Command, const char*>> m = {
      {"run", {cmd_run, kRunHelp}},
      {"check", {cmd_check, kCheckHelp}},
      {"fmt", {cmd_fmt, kFmtHelp}},
      {"ops", {cmd_ops, kOpsHelp}},
      {"compile", {cmd_compile, kCompileHelp}},
      {"import", {cmd_import, kImportHelp}},
      {"spirv", {cmd_spirv, kSpirvHelp}},
      {"dump", {cmd_dump, kDumpHelp}},
      {"scenario", {cmd_scenario, kScenarioHelp}},
      {"devices", {cmd_devices, kDevicesHelp}},
      {"iospec", {cmd_iospec, kIospecHelp}},
      {"stream", {cmd_stream, kStreamHelp}},
      {"conformance", {cmd_conformance, kConformanceHelp}},
  };
  return m;
}

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::cerr << kMainHelp;
    return kExitUsage;
  }
  const std::string& first = argv[0];
  if (first == "-h" || first == "--help") {
    std::cout << kMainHelp;
    return kExitOk;
  }
  if (first == "-V" || first == "--version") {
    std::cout << "weft " << kVersion << "\n";
    return kExitOk;
  }
  if (first == "help") {
    if (argv.size() == 1) {
      std::cout << kMainHelp;
      return kExitOk;
    }
    auto it = commands().find(argv[1]);
    if (it == commands().end())
      usage_error("unknown command '" + argv[1] + "' (commands: run, check, fmt, ops, compile, dump, spirv, devices, iospec, stream)");
    std::cout << it->second.second;
    return kExitOk;
  }
  auto it = commands().find(first);
  if (it == commands().end()) {
    if (first[0] == '-') usage_error("unknown option '" + first + "' (see `weft --help`)");
    usage_error("unknown command '" + first + "' (commands: run, check, fmt, ops, compile, dump, spirv, devices, iospec, stream; see `weft --help`)");
  }
  Args args(first, std::vector<std::string>(argv.begin() + 1, argv.end()));
  return it->second.first(args);
}

}  // namespace

std::string read_file(const std::string& path) { return read_file_bytes(path, kMaxTextModelBytes, "a text file"); }

}  // namespace weft::cli

namespace {
std::string command_line(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += (s.empty() ? "" : " ") + a;
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    int rc = weft::cli::dispatch(args);
    std::cout.flush();
    return rc;
  } catch (const weft::cli::CliError& e) {
    std::cout.flush();
    std::cerr << "weft: error: " << e.message << "\n";
    return e.exit_code;
  } catch (const weft::Error& e) {
    std::cout.flush();
    std::cerr << "weft: error: " << e.what() << "\n";
    return weft::cli::kExitError;
  } catch (const std::bad_alloc&) {
    std::cout.flush();
    std::cerr << "weft: error: out of memory running `weft " << command_line(args)
              << "`: the model or its inputs ask for more memory than this machine has\n";
    return weft::cli::kExitError;
  } catch (const std::exception& e) {
    // Not a weft::Error: a library's exception Weft did not translate. Say where it came from.
    std::cout.flush();
    std::cerr << "weft: error: running `weft " << command_line(args) << "`: " << e.what()
              << " (an unexpected " << (dynamic_cast<const std::system_error*>(&e) ? "system" : "internal")
              << " error; please report it with the command)\n";
    return weft::cli::kExitError;
  }
}
