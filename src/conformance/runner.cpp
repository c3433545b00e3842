// The TOSA conformance runner (weft/conformance.h): a test folder -> inputs from the generation
// library -> the reference model's precise results -> Weft's results per backend -> verdicts from
// the verify library and from Weft's own compliance rules.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <nlohmann/json.hpp>

#include "weft/conformance.h"
#include "weft/io.h"
#include "weft/npy.h"
#include "weft/runtime.h"
#include "weft/tosa_file.h"

extern char** environ;

namespace weft::conformance {

namespace fs = std::filesystem;
using nlohmann::json;

const char* status_name(Status s) {
  switch (s) {
    case Status::kPass: return "pass";
    case Status::kFail: return "fail";
    case Status::kNotTaken: return "not taken";
    case Status::kError: return "error";
  }
  return "?";
}

std::vector<std::string> find_tests(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (fs::exists(fs::path(root) / "desc.json", ec)) {
      out.push_back(root);
      continue;
    }
    if (!fs::is_directory(root, ec)) throw Error(ErrorCode::kIo, "not a test folder nor a folder of tests", {.file = root});
    for (fs::recursive_directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
      if (it->is_regular_file() && it->path().filename() == "desc.json") out.push_back(it->path().parent_path().string());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// ---- The reference tools ----------------------------------------------------------------------------

// The C struct of the verify library.
struct tosa_tensor_t {
  const char* name;
  int32_t* shape;
  int32_t num_dims;
  int data_type;
  uint8_t* data;
  size_t size;
};
using GenerateFn = bool (*)(const char*, const char*, void*, size_t);
using VerifyFn = bool (*)(const tosa_tensor_t*, const tosa_tensor_t*, const tosa_tensor_t*, const char*);

struct Tools {
  std::string model;
  GenerateFn generate = nullptr;
  VerifyFn verify = nullptr;
};

const Tools& tools(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, Tools> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(dir);
  if (it != loaded.end()) return it->second;
  Tools t;
  const fs::path base(dir);
  t.model = (base / "tosa_reference_model").string();
  if (dir.empty() || !fs::exists(t.model))
    throw Error(ErrorCode::kUnsupported, "the TOSA reference model is not at '" + t.model +
                                             "': give the folder of tosa_reference_model and its libraries (--tools DIR "
                                             "or WEFT_TOSA_TOOLS)");
  auto load = [&](const char* file, const char* symbol) -> void* {
    const std::string path = (base / file).string();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw Error(ErrorCode::kUnsupported, std::string("cannot load ") + path + ": " + dlerror());
    void* f = dlsym(h, symbol);
    if (!f) throw Error(ErrorCode::kUnsupported, path + " has no " + symbol);
    return f;
  };
  t.generate = reinterpret_cast<GenerateFn>(load("libtosa_reference_generate_lib.so", "tgd_generate_data"));
  // The verify library is optional: without it Weft's own rules give the verdicts.
  if (fs::exists(base / "libtosa_reference_verify_lib.so"))
    t.verify = reinterpret_cast<VerifyFn>(load("libtosa_reference_verify_lib.so", "tvf_verify_data"));
  return loaded.emplace(dir, t).first->second;
}

// Runs a program without a shell; its output goes to `log`. Returns its exit status (-1: it did not start).
int run_program(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string tail(const std::string& path, size_t n = 600) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

int tosa_type_code(DType t) {
  switch (t) {
    case DType::kBf16: return 0;
    case DType::kBool: return 1;
    case DType::kFp16: return 2;
    case DType::kFp32: return 3;
    case DType::kInt16: return 4;
    case DType::kInt32: return 5;
    case DType::kInt48: return 6;
    case DType::kInt4: return 7;
    case DType::kInt8: return 8;
    case DType::kShape: return 11;
    case DType::kFp8E4M3: return 12;
    case DType::kFp8E5M2: return 13;
  }
  return -1;
}

// A reference result: the npy's values as doubles (float64 in precise mode) and its raw form.
struct RefData {
  std::vector<double> values;
  std::vector<uint8_t> raw;  // the file's data bytes
  int type_code = 99;        // tosa_tensor_t data_type of `raw`
  Shape shape;
};

RefData read_reference(const std::string& path) {
  const std::string bytes = read_file_bytes(path, size_t{8} << 30, "a reference result");
  auto bad = [&](const std::string& why) -> RefData { throw Error(ErrorCode::kParse, why, {.file = path}); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) bad("not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else {
    if (bytes.size() < 12) bad("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
    start = 12;
  }
  if (start + header_len > bytes.size()) bad("truncated header");
  const std::string header = bytes.substr(start, header_len);
  auto field = [&](const std::string& key) {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) bad("header has no " + key);
    return header.substr(header.find(':', k) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  std::string shape_text = field("shape");
  shape_text = shape_text.substr(shape_text.find('(') + 1, shape_text.find(')') - shape_text.find('(') - 1);
  RefData r;
  for (size_t p = 0; p < shape_text.size();) {
    size_t q = shape_text.find(',', p);
    std::string part = shape_text.substr(p, q == std::string::npos ? std::string::npos : q - p);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (!part.empty()) r.shape.push_back(std::stoll(part));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  int64_t n = 1;
  for (int64_t d : r.shape) n *= d;
  const size_t data = start + header_len;
  struct Kind {
    const char* descr;
    size_t size;
    int code;
  };
  static const Kind kinds[] = {{"<f8", 8, 99}, {"<f4", 4, 3}, {"<f2", 2, 2}, {"|b1", 1, 1}, {"|i1", 1, 8},
                               {"<i2", 2, 4},  {"<i4", 4, 5}, {"<i8", 8, 6}, {"|u1", 1, 10}, {"<u2", 2, 9}};
  const Kind* k = nullptr;
  for (const Kind& c : kinds)
    if (descr == c.descr) k = &c;
  if (!k) bad("unsupported dtype '" + descr + "'");
  if (bytes.size() - data < static_cast<size_t>(n) * k->size) bad("truncated data");
  r.raw.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data),
               bytes.begin() + static_cast<std::ptrdiff_t>(data + static_cast<size_t>(n) * k->size));
  r.type_code = k->code;
  r.values.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < r.values.size(); ++i) {
    const uint8_t* p = r.raw.data() + i * k->size;
    double v = 0;
    switch (k->code) {
      case 99: { double d; std::memcpy(&d, p, 8); v = d; break; }
      case 3: { float f; std::memcpy(&f, p, 4); v = f; break; }
      case 2: v = load_as_double(DType::kFp16, p); break;
      case 1: case 10: v = *p; break;
      case 8: v = static_cast<int8_t>(*p); break;
      case 4: { int16_t x; std::memcpy(&x, p, 2); v = x; break; }
      case 9: { uint16_t x; std::memcpy(&x, p, 2); v = x; break; }
      case 5: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case 6: { int64_t x; std::memcpy(&x, p, 8); v = static_cast<double>(x); break; }
    }
    r.values[i] = v;
  }
  return r;
}

// "FP32" -> "fp32" and so on: the data_gen type names as parse_dtype takes them.
std::string lowercase_type(std::string t) {
  static const std::map<std::string, std::string> names = {
      {"BOOL", "bool"}, {"INT4", "i4"},   {"INT8", "i8"},   {"INT16", "i16"}, {"INT32", "i32"},       {"INT48", "i48"},
      {"FP16", "f16"},  {"BF16", "bf16"}, {"FP32", "f32"},  {"SHAPE", "shape"}, {"FP8E4M3", "f8e4m3"}, {"FP8E5M2", "f8e5m2"}};
  auto it = names.find(t);
  return it == names.end() ? t : it->second;
}

}  // namespace

TestResult run_test(const std::string& dir, const Options& options) {
  const Tools& t = tools(options.tools_dir);
  TestResult result;
  result.dir = dir;
  result.name = fs::path(dir).filename().string();
  json desc;
  try {
    desc = json::parse(read_file_bytes((fs::path(dir) / "desc.json").string(), kMaxConfigBytes, "a test description"));
  } catch (const json::exception& e) {
    result.error = "desc.json: " + std::string(e.what());
    return result;
  } catch (const Error& e) {
    result.error = e.what();
    return result;
  }
  try {
    const json& meta = desc.at("meta");
    const std::string data_gen = meta.at("data_gen").dump();
    const json& gen_tensors = meta.at("data_gen").at("tensors");
    for (const auto& [name, g] : gen_tensors.items())
      if (g.contains("op")) result.op = g.at("op").get<std::string>();
    if (desc.contains("test_requirements") && desc["test_requirements"].contains("profiles_supported"))
      for (const auto& p : desc["test_requirements"]["profiles_supported"]) result.profiles.push_back(p.get<std::string>());
    const bool expected_failure = desc.value("expected_failure", false);
    if (options.max_input_elements > 0)
      for (const auto& [name, g] : gen_tensors.items()) {
        int64_t n = 1;
        for (const auto& d : g.value("shape", json::array())) n *= d.get<int64_t>();
        if (n > options.max_input_elements) {
          result.skipped = "input '" + name + "' has " + std::to_string(n) + " elements, more than " +
                           std::to_string(options.max_input_elements);
          return result;
        }
      }

    // Inputs: every tensor the generator describes, in Weft's storage of its type.
    std::map<std::string, Tensor> inputs;
    auto generate = [&](const std::string& name, const TensorType& type) -> std::optional<Tensor> {
      if (!gen_tensors.contains(name)) return std::nullopt;
      auto it = inputs.find(name);
      if (it != inputs.end()) return it->second;
      Tensor x = Tensor::zeros(type);
      if (type.dtype == DType::kShape) {
        // The library writes shape values as int32.
        std::vector<int32_t> v(static_cast<size_t>(type.num_elements()));
        if (!t.generate(data_gen.c_str(), name.c_str(), v.data(), v.size() * 4))
          throw Error(ErrorCode::kRuntime, "tgd_generate_data failed for '" + name + "'");
        for (size_t i = 0; i < v.size(); ++i) {
          const int64_t w = v[i];
          std::memcpy(x.mutable_bytes() + 8 * i, &w, 8);
        }
      } else if (!t.generate(data_gen.c_str(), name.c_str(), x.mutable_bytes(), x.byte_size())) {
        throw Error(ErrorCode::kRuntime, "tgd_generate_data failed for '" + name + "'");
      }
      inputs[name] = x;
      return x;
    };
    tosa_file::ReadOptions read_options;
    read_options.constant_data = generate;
    const std::string tosa_path = (fs::path(dir) / desc.at("tosa_file").get<std::string>()).string();
    Module module;
    try {
      module = tosa_file::read(tosa_path, read_options);
    } catch (const Error& e) {
      if (expected_failure) {  // a negative test: refused, as it must be
        result.backends.push_back({"verifier", Status::kPass, e.what()});
        return result;
      }
      throw;
    }
    if (expected_failure) {
      result.backends.push_back({"verifier", Status::kFail, "the verifier accepted a test that must fail"});
      return result;
    }
    for (ValueId v : module.main().inputs()) {
      const Value& val = module.main().value(v);
      if (!generate(val.name, val.type))
        throw Error(ErrorCode::kVerify, "input '" + val.name + "' has no data_gen entry");
    }

    // The reference model's precise results.
    fs::path work = options.work_dir.empty() ? fs::temp_directory_path() : fs::path(options.work_dir);
    work /= "weft-conformance-" + std::to_string(::getpid()) + "-" + result.name;
    fs::create_directories(work);
    struct Cleanup {
      fs::path p;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    } cleanup{work};
    const auto& ifm_name = desc.at("ifm_name");
    const auto& ifm_file = desc.at("ifm_file");
    for (size_t i = 0; i < ifm_name.size(); ++i) {
      const std::string name = ifm_name[i].get<std::string>();
      // Shape operands the folder stores as .npy go to the reference model as they are (a rank-0
      // array for the empty shape of a RESHAPE to rank 0).
      const fs::path stored = fs::path(dir) / ifm_file[i].get<std::string>();
      if (fs::exists(stored)) {
        fs::copy_file(stored, work / ifm_file[i].get<std::string>(), fs::copy_options::overwrite_existing);
        continue;
      }
      auto it = inputs.find(name);
      if (it == inputs.end() && gen_tensors.contains(name)) {
        // A constant the file already holds (an empty shape): made from its data_gen entry.
        const json& gt = gen_tensors.at(name);
        const std::optional<DType> d = parse_dtype(lowercase_type(gt.value("data_type", "")));
        Shape shape;
        for (const auto& x : gt.value("shape", json::array())) shape.push_back(x.get<int64_t>());
        if (d == DType::kShape) shape = {shape.empty() ? 0 : shape[0]};
        if (d) generate(name, TensorType{*d, shape});
        it = inputs.find(name);
      }
      if (it == inputs.end()) throw Error(ErrorCode::kVerify, "input '" + name + "' was not generated");
      write_npy((work / ifm_file[i].get<std::string>()).string(), it->second);  // shapes as <i8
    }
    // The reference model reads the test (linked) and the inputs from the work folder.
    fs::create_symlink(fs::absolute(tosa_path), work / desc.at("tosa_file").get<std::string>());
    std::ofstream(work / "desc.json") << desc.dump();
    const std::string log = (work / "reference.log").string();
    const int rc = run_program({t.model, "--test_desc=" + (work / "desc.json").string(), "--precise_mode=1"}, log);
    if (rc != 0) throw Error(ErrorCode::kRuntime, "the reference model failed (exit " + std::to_string(rc) + "): " + tail(log));
    const auto& ofm_name = desc.at("ofm_name");
    const auto& ofm_file = desc.at("ofm_file");
    const json& compliance = meta.at("compliance").at("tensors");
    const bool bounds = desc.contains("test_requirements") &&
                        desc["test_requirements"].value("bounds_file_required", false);
    std::vector<RefData> refs, bnds;
    for (size_t k = 0; k < ofm_name.size(); ++k) {
      refs.push_back(read_reference((work / ofm_file[k].get<std::string>()).string()));
      if (bounds) bnds.push_back(read_reference((work / ("bounds_" + ofm_file[k].get<std::string>())).string()));
      result.modes.push_back(compliance.at(ofm_name[k].get<std::string>()).value("mode", "?"));
    }

    // Weft, per backend.
    std::vector<Tensor> in;
    for (ValueId v : module.main().inputs()) in.push_back(inputs.at(module.main().value(v).name));
    for (const std::string& backend : options.backends) {
      BackendResult br;
      br.backend = backend;
      std::vector<Tensor> out;
      try {
        BackendOptions bo;
        bo.backends = {backend};
        bo.nan_exact = true;
        auto model = Model::from_module(module, bo);
        // Nodes the backend declined run on the reference kernels: not this backend's result.
        if (backend != "reference") {
          std::string declined;
          std::istringstream lines(model->explain());
          for (std::string line; std::getline(lines, line);) {
            const size_t at = line.find("not on " + backend + ": ");
            if (at != std::string::npos) declined += (declined.empty() ? "" : "; ") + line.substr(at);
          }
          if (!declined.empty()) {
            br.status = Status::kNotTaken;
            br.detail = declined;
            result.backends.push_back(br);
            continue;
          }
        }
        Context ctx(model);
        out = ctx.run(in);
      } catch (const Error& e) {
        const std::string what = e.what();
        br.status = what.find("no backend runs") != std::string::npos || e.code() == ErrorCode::kUnsupported
                        ? Status::kNotTaken
                        : Status::kError;
        br.detail = what;
        result.backends.push_back(br);
        continue;
      }
      br.status = Status::kPass;
      for (size_t k = 0; k < ofm_name.size() && k < out.size(); ++k) {
        const std::string name = ofm_name[k].get<std::string>();
        const Tensor& imp = out[k];
        std::vector<int32_t> shape(imp.shape().begin(), imp.shape().end()), ref_shape(refs[k].shape.begin(), refs[k].shape.end());
        tosa_tensor_t ref_t{name.c_str(), ref_shape.data(), static_cast<int32_t>(ref_shape.size()), refs[k].type_code,
                            refs[k].raw.data(), refs[k].raw.size()};
        tosa_tensor_t bnd_t{};
        if (bounds) {
          bnd_t = {name.c_str(), ref_shape.data(), static_cast<int32_t>(ref_shape.size()), bnds[k].type_code,
                   bnds[k].raw.data(), bnds[k].raw.size()};
        }
        std::vector<uint8_t> imp_bytes(imp.buffer().data(), imp.buffer().data() + imp.byte_size());
        tosa_tensor_t imp_t{name.c_str(), shape.data(), static_cast<int32_t>(shape.size()), tosa_type_code(imp.dtype()),
                            imp_bytes.data(), imp_bytes.size()};
        // The library takes the whole meta.compliance and finds the tensor by name.
        const std::string config = meta.at("compliance").dump();
        const Verdict own = check(compliance.at(name).dump(), imp, refs[k].values,
                                  bounds ? std::span<const double>(bnds[k].values) : std::span<const double>());
        if (!t.verify && !own.handled) {
          br.status = Status::kError;
          br.detail += "output '" + name + "': mode " + compliance.at(name).value("mode", "?") +
                       " cannot be judged without the verify library; ";
          continue;
        }
        const bool library = t.verify ? t.verify(&ref_t, bounds ? &bnd_t : nullptr, &imp_t, config.c_str()) : own.pass;
        if (own.handled) {
          br.checked_by_weft = true;
          if (own.pass != library) {
            br.checker_agrees = false;
            br.detail += "Weft's " + compliance.at(name).value("mode", "?") + " check says " +
                         (own.pass ? "pass" : "fail (" + own.why + ")") + ", the verify library " +
                         (library ? "pass" : "fail") + "; ";
          }
        }
        if (!library) {
          br.status = Status::kFail;
          br.detail += "output '" + name + "' does not comply (" + compliance.at(name).value("mode", "?") + ")" +
                       (own.handled && !own.pass ? ": " + own.why : "") + "; ";
        }
      }
      result.backends.push_back(br);
    }
  } catch (const json::exception& e) {
    result.error = "desc.json: " + std::string(e.what());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported && result.op.empty()) throw;
    result.error = e.what();
  }
  return result;
}

}  // namespace weft::conformance
