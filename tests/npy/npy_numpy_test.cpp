// Cross-checks the .npy reader and writer against numpy itself (a required test dependency:
// scripts/setup.sh installs python3-numpy). numpy writes a file of every dtype Weft maps and we
// read it; we write a file of every DType and numpy loads it and checks its values and bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "weft/npy.h"

namespace weft {
namespace {

class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_npy_numpy") {}
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The first Python interpreter that can import numpy: $WEFT_PYTHON, python3 on PATH, then the
// system one (a pyenv/venv python3 on PATH often lacks the Debian python3-numpy package).
std::optional<std::string> find_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WEFT_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates) {
    std::string cmd = "'" + py + "' -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return std::nullopt;
}

// Runs `script` (written to dir/name) with numpy's Python; returns exit status and output.
int run_python(const TempDir& dir, const std::string& name, const std::string& script, std::string* output) {
  auto py = find_python();
  if (!py) {
    *output =
        "no python3 with numpy found (tried $WEFT_PYTHON, python3, /usr/bin/python3); "
        "numpy is a required test dependency: run scripts/setup.sh (installs python3-numpy)";
    return -1;
  }
  std::string script_path = dir.path() + "/" + name;
  std::ofstream(script_path) << script;
  std::string log = dir.path() + "/" + name + ".log";
  std::string cmd = "'" + *py + "' '" + script_path + "' '" + dir.path() + "' >'" + log + "' 2>&1";
  int rc = std::system(cmd.c_str());
  *output = slurp(log);
  return rc;
}

// ---- numpy writes, Weft reads -------------------------------------------------------------

constexpr const char* kWriteScript = R"PY(
import os, sys
import numpy as np
d = sys.argv[1]

def save(name, a, version=None, check=None, allow_pickle=False):
    p = os.path.join(d, name + '.npy')
    if version is None:
        np.save(p, a, allow_pickle=allow_pickle)
    else:
        with open(p, 'wb') as f:
            np.lib.format.write_array(f, a, version=version, allow_pickle=allow_pickle)
    # Expected values, C order, as exact decimal doubles (repr round-trips).
    vals = np.asarray(a if check is None else check)
    with open(os.path.join(d, name + '.txt'), 'w') as f:
        f.write(' '.join(str(x) for x in vals.shape) + '\n')
        if vals.dtype.kind in 'biuf':
            f.write(' '.join(repr(float(x)) for x in vals.ravel(order='C')) + '\n')

bf_bits = np.array([0x3fc0, 0xbf80, 0x7f80, 0x0001, 0x8000], dtype='<u2')
bf_vals = (bf_bits.astype(np.uint32) << 16).view(np.float32)

save('bool', np.array([[True, False, True], [False, False, True]]))
save('i1', np.arange(-6, 6, dtype=np.int8).reshape(3, 4))
save('i2', np.array([-32768, -1, 0, 1, 32767], dtype='<i2'))
save('i4', (np.arange(24, dtype='<i4').reshape(2, 3, 4) - 12) * 100000)
save('i8', np.array([-(2**47), 2**47 - 1, 0, -5], dtype='<i8'))
save('i8_shape', np.array([2**62, -1, 3], dtype='<i8'))
save('f2', np.array([0.5, -1.25, 65504, 6e-8, -0.0, np.inf], dtype='<f2'))
save('f4', np.linspace(-3, 3, 13, dtype=np.float32).reshape(13, 1) / 7)
save('bf16_u2', bf_bits, check=bf_vals)
save('bf16_v2', bf_bits.view('V2'), check=bf_vals)
save('bf16_be', bf_bits.astype('>u2'), check=bf_vals)
save('fp8_u1', np.array([0x38, 0x00, 0x80, 0x7f, 0xc0], dtype='|u1'))
save('fp8_v1', np.array([0x3c, 0xc0], dtype='|u1').view('V1'), check=np.array([0x3c, 0xc0]))
save('be_f4', np.array([1.5, -2.25, 3e38, 1e-40], dtype='>f4'))
save('be_i4', np.array([[1, -2], [70000, -2**31]], dtype='>i4'))
save('be_i2', np.array([1, -300], dtype='>i2'))
save('be_f2', np.array([1.5, -0.25], dtype='>f2'))
save('be_i8', np.array([5, -(2**40)], dtype='>i8'))
save('int4', np.array([-8, 7, 0, -1], dtype='i1'))
save('v2', np.arange(5, dtype=np.float32) * 1.5, version=(2, 0))
save('v3', np.arange(6, dtype=np.int16).reshape(2, 3), version=(3, 0))
save('scalar', np.array(3.5, dtype=np.float32))
save('empty', np.zeros((0, 3), dtype=np.float32))
save('big', (np.arange(50000, dtype=np.float32) * 0.125).reshape(250, 200))
save('big_be', (np.arange(50000, dtype=np.float32) - 7).astype('>f4'))
save('big_bool', (np.arange(70000) % 3 == 0))
save('fortran', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
save('f8', np.zeros(3))
save('c8', np.zeros(2, dtype=np.complex64))
save('obj', np.array([1, 'a'], dtype=object), allow_pickle=True)
save('unicode', np.array(['ab', 'c']))
save('u4', np.zeros(2, dtype=np.uint32))
save('i8_range', np.array([0, 2**47], dtype='<i8'))
save('int4_range', np.array([8], dtype='i1'))
save('structured', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f4')]))
print('ok')
)PY";

struct ReadCase {
  const char* name;
  std::optional<DType> expected;  // passed to read_npy
  DType dtype;                    // the resulting tensor's type
  bool compare_bits = false;      // compare raw storage bytes (fp8) instead of values
};

struct ErrorCase {
  const char* name;
  std::optional<DType> expected;
  ErrorCode code;
  const char* needle;
};

TEST(NpyNumpy, ReadsWhatNumpyWrites) {
  TempDir dir;
  std::string out;
  int rc = run_python(dir, "write.py", kWriteScript, &out);
  ASSERT_EQ(rc, 0) << out;

  const ReadCase cases[] = {
      {"bool", std::nullopt, DType::kBool},
      {"i1", std::nullopt, DType::kInt8},
      {"i2", std::nullopt, DType::kInt16},
      {"i4", std::nullopt, DType::kInt32},
      {"i8", std::nullopt, DType::kInt48},
      {"i8", DType::kInt48, DType::kInt48},
      {"i8_shape", DType::kShape, DType::kShape},
      {"f2", std::nullopt, DType::kFp16},
      {"f4", DType::kFp32, DType::kFp32},
      {"bf16_u2", DType::kBf16, DType::kBf16},
      {"bf16_v2", DType::kBf16, DType::kBf16},
      {"bf16_be", DType::kBf16, DType::kBf16},
      {"fp8_u1", DType::kFp8E4M3, DType::kFp8E4M3, true},
      {"fp8_v1", DType::kFp8E5M2, DType::kFp8E5M2, true},
      {"be_f4", std::nullopt, DType::kFp32},
      {"be_i4", DType::kInt32, DType::kInt32},
      {"be_i2", std::nullopt, DType::kInt16},
      {"be_f2", std::nullopt, DType::kFp16},
      {"be_i8", std::nullopt, DType::kInt48},
      {"int4", DType::kInt4, DType::kInt4},
      {"v2", std::nullopt, DType::kFp32},
      {"v3", std::nullopt, DType::kInt16},
      {"scalar", std::nullopt, DType::kFp32},
      {"empty", std::nullopt, DType::kFp32},
      {"big", DType::kFp32, DType::kFp32},
      {"big_be", DType::kFp32, DType::kFp32},
      {"big_bool", DType::kBool, DType::kBool},
  };
  for (const ReadCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string base = dir.path() + "/" + c.name;
    Tensor t;
    try {
      t = read_npy(base + ".npy", c.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    EXPECT_EQ(t.dtype(), c.dtype);
    std::istringstream txt(slurp(base + ".txt"));
    std::string shape_line, values_line;
    std::getline(txt, shape_line);
    std::getline(txt, values_line);
    Shape shape;
    std::istringstream sl(shape_line);
    for (int64_t d; sl >> d;) shape.push_back(d);
    EXPECT_EQ(t.shape(), shape);
    std::vector<double> want;
    std::istringstream vl(values_line);
    for (std::string tok; vl >> tok;) want.push_back(std::strtod(tok.c_str(), nullptr));
    ASSERT_EQ(static_cast<int64_t>(want.size()), t.num_elements());
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      double got = c.compare_bits ? static_cast<double>(t.bytes()[i]) : t.at_double(i);
      ASSERT_EQ(got, want[static_cast<size_t>(i)]) << "element " << i;
    }
  }
  // Large files are memory-mapped and used in place; big-endian ones are converted into a copy.
  EXPECT_FALSE(read_npy(dir.path() + "/big.npy").buffer().writable());
  EXPECT_TRUE(read_npy(dir.path() + "/big_be.npy").buffer().writable());

  const ErrorCase errors[] = {
      {"fortran", std::nullopt, ErrorCode::kUnsupported, "Fortran-order"},
      {"f8", std::nullopt, ErrorCode::kUnsupported, "float64"},
      {"c8", std::nullopt, ErrorCode::kUnsupported, "complex"},
      {"obj", std::nullopt, ErrorCode::kUnsupported, "objects"},
      {"unicode", std::nullopt, ErrorCode::kUnsupported, "unicode"},
      {"u4", std::nullopt, ErrorCode::kUnsupported, "'<u4'"},
      {"structured", std::nullopt, ErrorCode::kUnsupported, "structured"},
      {"i8_range", std::nullopt, ErrorCode::kInvalidArgument, "outside the i48 range"},
      {"int4_range", DType::kInt4, ErrorCode::kInvalidArgument, "outside the i4 range"},
      {"f4", DType::kFp16, ErrorCode::kInvalidArgument, "expected f16"},
      {"bf16_u2", std::nullopt, ErrorCode::kInvalidArgument, "expected type must be given"},
      {"i4", DType::kBf16, ErrorCode::kInvalidArgument, "expected bf16"},
  };
  for (const ErrorCase& c : errors) {
    SCOPED_TRACE(c.name);
    std::string path = dir.path() + "/" + c.name + ".npy";
    try {
      read_npy(path, c.expected);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

// ---- Weft writes, numpy reads ---------------------------------------------------------------

constexpr const char* kReadScript = R"PY(
import io, os, sys
import numpy as np
d = sys.argv[1]

def check(name, descr, shape, values):
    p = os.path.join(d, name + '.npy')
    a = np.load(p)
    assert a.dtype.str == descr, (name, a.dtype.str, descr)
    assert a.shape == shape, (name, a.shape, shape)
    assert a.ravel().tolist() == values, (name, a.ravel().tolist(), values)
    # Byte for byte what np.save writes (header layout, padding, data).
    b = io.BytesIO()
    np.save(b, a)
    with open(p, 'rb') as f:
        mine = f.read()
    assert b.getvalue() == mine, (name, b.getvalue()[:128], mine[:128])

check('w_bool', '|b1', (2, 2), [True, False, False, True])
check('w_i4', '|i1', (4,), [-8, 7, 0, -1])
check('w_i8', '|i1', (3,), [-128, 0, 127])
check('w_i16', '<i2', (2, 3), [-32768, -1, 0, 1, 2, 32767])
check('w_i32', '<i4', (2,), [-2**31, 2**31 - 1])
check('w_i48', '<i8', (2,), [-(2**47), 2**47 - 1])
check('w_shape', '<i8', (3,), [1, 2**62, -1])
check('w_f16', '<f2', (3,), [0.5, -2.0, 65504.0])
check('w_bf16', '<u2', (2,), [0x3fc0, 0xbf80])
check('w_f8e4m3', '|u1', (2,), [0x38, 0xc0])
check('w_f8e5m2', '|u1', (2,), [0x3c, 0xc0])
check('w_f32', '<f4', (2, 2, 2), [i * 0.25 - 1 for i in range(8)])
check('w_scalar', '<f4', (), [7.5])
check('w_empty', '<f4', (0, 4), [])
check('w_rank6', '<f4', (1, 2, 1, 2, 1, 1), [1.0, 2.0, 3.0, 4.0])
check('w_big', '<f4', (300, 100), [float(i % 1000) for i in range(30000)])
print('ok')
)PY";

TEST(NpyNumpy, NumpyReadsWhatWeWrite) {
  TempDir dir;
  auto w = [&](const std::string& name, const Tensor& t) { write_npy(dir.path() + "/" + name + ".npy", t); };
  auto ints = [](DType dt, Shape s, std::vector<int64_t> v) {
    return Tensor::from_ints({dt, std::move(s)}, v);
  };
  auto dbls = [](DType dt, Shape s, std::vector<double> v) {
    return Tensor::from_doubles({dt, std::move(s)}, v);
  };
  w("w_bool", ints(DType::kBool, {2, 2}, {1, 0, 0, 1}));
  w("w_i4", ints(DType::kInt4, {4}, {-8, 7, 0, -1}));
  w("w_i8", ints(DType::kInt8, {3}, {-128, 0, 127}));
  w("w_i16", ints(DType::kInt16, {2, 3}, {-32768, -1, 0, 1, 2, 32767}));
  w("w_i32", ints(DType::kInt32, {2}, {INT32_MIN, INT32_MAX}));
  w("w_i48", ints(DType::kInt48, {2}, {-(int64_t{1} << 47), (int64_t{1} << 47) - 1}));
  w("w_shape", ints(DType::kShape, {3}, {1, int64_t{1} << 62, -1}));
  w("w_f16", dbls(DType::kFp16, {3}, {0.5, -2, 65504}));
  w("w_bf16", dbls(DType::kBf16, {2}, {1.5, -1}));
  w("w_f8e4m3", dbls(DType::kFp8E4M3, {2}, {1, -2}));
  w("w_f8e5m2", dbls(DType::kFp8E5M2, {2}, {1, -2}));
  std::vector<double> f32(8);
  for (int i = 0; i < 8; ++i) f32[static_cast<size_t>(i)] = i * 0.25 - 1;
  w("w_f32", dbls(DType::kFp32, {2, 2, 2}, f32));
  w("w_scalar", dbls(DType::kFp32, {}, {7.5}));
  w("w_empty", Tensor::zeros({DType::kFp32, {0, 4}}));
  w("w_rank6", dbls(DType::kFp32, {1, 2, 1, 2, 1, 1}, {1, 2, 3, 4}));
  std::vector<double> big(30000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i % 1000);
  w("w_big", dbls(DType::kFp32, {300, 100}, big));

  std::string out;
  int rc = run_python(dir, "read.py", kReadScript, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

}  // namespace
}  // namespace weft
