// Tests of the .npy reader and writer: in-memory round trips, every error path, a small fuzz of
// truncations and corrupted headers, and a cross-check against numpy itself in both directions.
#include "common/temp_dir.h"
#include "weft/npy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace weft {
namespace {

// Temporary directories of this suite are named weft_npy_test.XXXXXX.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_npy_test") {}
};

// A hand-made .npy file: preamble for `version`, the given header dict, padding, data.
std::vector<uint8_t> make_npy(const std::string& dict, const std::vector<uint8_t>& data, int major = 1,
                              bool pad = true) {
  std::string header = dict;
  size_t len_size = major == 1 ? 2 : 4;
  size_t hlen = header.size() + 1;
  size_t padlen = pad ? (64 - (8 + len_size + hlen) % 64) % 64 : 0;
  header.append(padlen, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < len_size; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Buffer to_buffer(const std::vector<uint8_t>& v) {
  Buffer b = Buffer::allocate(v.size());
  if (!v.empty()) std::memcpy(b.mutable_data(), v.data(), v.size());
  return b;
}

Tensor parse(const std::vector<uint8_t>& v, std::optional<DType> expected = std::nullopt) {
  return parse_npy(to_buffer(v), "mem.npy", expected);
}

// Expects parse to fail with `code` and a message containing `needle` and the source name.
void expect_error(const std::vector<uint8_t>& v, ErrorCode code, const std::string& needle,
                  std::optional<DType> expected = std::nullopt) {
  try {
    parse(v, expected);
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(e.location().file, "mem.npy");
  }
}

std::vector<uint8_t> le_bytes(const void* p, size_t n) {
  auto b = static_cast<const uint8_t*>(p);
  return {b, b + n};
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// ---- In-memory round trips -------------------------------------------------------------------

TEST(Npy, RoundTripsEveryDType) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto dt = static_cast<DType>(i);
    TensorType type{dt, {2, 3}};
    std::vector<int64_t> ints = {0, 1, -1, 3, -4, 7};
    Tensor t = is_float(dt) ? Tensor::from_doubles(type, std::vector<double>{0, 1, -1, 0.5, -2, 3})
                            : Tensor::from_ints(
                                  type, dt == DType::kBool ? std::vector<int64_t>{0, 1, 1, 0, 1, 0} : ints);
    std::vector<uint8_t> bytes = encode_npy(t);
    EXPECT_EQ((bytes.size() - t.byte_size()) % 64, 0u) << dtype_name(dt);
    Tensor back = parse(bytes, dt);
    EXPECT_TRUE(back.identical(t)) << dtype_name(dt);
  }
}

TEST(Npy, NaturalTypesWithoutExpected) {
  struct Case {
    DType written;
    DType natural;
  } cases[] = {{DType::kBool, DType::kBool},   {DType::kInt8, DType::kInt8},   {DType::kInt4, DType::kInt8},
               {DType::kInt16, DType::kInt16}, {DType::kInt32, DType::kInt32}, {DType::kInt48, DType::kInt48},
               {DType::kShape, DType::kInt48}, {DType::kFp16, DType::kFp16},   {DType::kFp32, DType::kFp32}};
  for (const Case& c : cases) {
    Tensor t = Tensor::zeros({c.written, {4}});
    EXPECT_EQ(parse(encode_npy(t)).dtype(), c.natural) << dtype_name(c.written);
  }
}

TEST(Npy, HeaderLayoutMatchesNumpy) {
  Tensor t = Tensor::zeros({DType::kFp32, {2, 3}});
  std::vector<uint8_t> b = encode_npy(t);
  std::string head(b.begin(), b.begin() + 128);
  EXPECT_EQ(head.substr(1, 9), std::string("NUMPY\x01\x00\x76\x00", 9));
  EXPECT_NE(head.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ(head[127], '\n');
  EXPECT_EQ(b.size(), 128u + 24u);
  // Rank 1 uses Python's one-element tuple syntax; rank 0 an empty tuple.
  std::vector<uint8_t> r1 = encode_npy(Tensor::zeros({DType::kInt8, {5}}));
  EXPECT_NE(std::string(r1.begin(), r1.end()).find("'shape': (5,), }"), std::string::npos);
  std::vector<uint8_t> r0 = encode_npy(Tensor::zeros({DType::kInt8, {}}));
  EXPECT_NE(std::string(r0.begin(), r0.end()).find("'shape': (), }"), std::string::npos);
  EXPECT_EQ(r0.size(), 129u);  // 55-byte dict + newline + 10-byte preamble pads to 128
}

TEST(Npy, Versions) {
  // Headers of real tensors always fit in 1.0 (numpy switches to 2.0 past 65535 bytes); files
  // written by numpy with version=(2, 0) or (3, 0) are read.
  std::vector<uint8_t> v1 = encode_npy(Tensor::zeros({DType::kFp32, {1, 2, 3, 4, 5, 6}}));
  EXPECT_EQ(v1[6], 1);
  float vals[2] = {1.5f, -2.f};
  for (int major : {2, 3}) {
    Tensor t = parse(make_npy(dict("<f4", "(2,)"), le_bytes(vals, 8), major));
    EXPECT_EQ(t.shape(), Shape{2});
    EXPECT_EQ(t.at_double(1), -2.0);
  }
}

TEST(Npy, ZeroDimAndEmpty) {
  float v = 3.25f;
  Tensor s = parse(make_npy(dict("<f4", "()"), le_bytes(&v, 4)));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.at_double(0), 3.25);
  Tensor e = parse(make_npy(dict("<f4", "(0, 3)"), {}));
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.num_elements(), 0);
  EXPECT_TRUE(e.valid());
  EXPECT_TRUE(parse(encode_npy(e)).identical(e));
}

TEST(Npy, BigEndianIsConverted) {
  std::vector<uint8_t> be_f4 = {0x3f, 0xc0, 0x00, 0x00, 0xc0, 0x20, 0x00, 0x00};  // 1.5, -2.5
  Tensor t = parse(make_npy(dict(">f4", "(2,)"), be_f4));
  EXPECT_EQ(t.dtype(), DType::kFp32);
  EXPECT_EQ(t.at_double(0), 1.5);
  EXPECT_EQ(t.at_double(1), -2.5);
  std::vector<uint8_t> be_i2 = {0xff, 0xfe, 0x01, 0x00};  // -2, 256
  Tensor i = parse(make_npy(dict(">i2", "(2,)"), be_i2));
  EXPECT_EQ(i.to_ints(), (std::vector<int64_t>{-2, 256}));
  // One-byte types have no byte order; '>' is harmless there. '=' is native (little-endian).
  EXPECT_EQ(parse(make_npy(dict(">i1", "(1,)"), {0xff})).at_int(0), -1);
  std::vector<uint8_t> le_i4 = {1, 0, 0, 0};
  EXPECT_EQ(parse(make_npy(dict("=i4", "(1,)"), le_i4)).at_int(0), 1);
}

TEST(Npy, RawBitConventions) {
  // bf16 as <u2 and <V2 raw bits: 0x3fc0 = 1.5
  std::vector<uint8_t> bits = {0xc0, 0x3f, 0x80, 0xbf};  // 1.5, -1.0
  for (const char* descr : {"<u2", "<V2", "|V2"}) {
    Tensor t = parse(make_npy(dict(descr, "(2,)"), bits), DType::kBf16);
    EXPECT_EQ(t.dtype(), DType::kBf16);
    EXPECT_EQ(t.at_double(0), 1.5) << descr;
    EXPECT_EQ(t.at_double(1), -1.0) << descr;
  }
  // fp8 as |u1 / |V1 raw bits: e4m3 0x38 = 1.0, e5m2 0x3c = 1.0
  EXPECT_EQ(parse(make_npy(dict("|u1", "(1,)"), {0x38}), DType::kFp8E4M3).at_double(0), 1.0);
  EXPECT_EQ(parse(make_npy(dict("|V1", "(1,)"), {0x3c}), DType::kFp8E5M2).at_double(0), 1.0);
  // Without an expected type, raw bits are ambiguous.
  expect_error(make_npy(dict("<u2", "(2,)"), bits), ErrorCode::kInvalidArgument,
               "expected type must be given");
  // shape values from <i8 (full 64-bit range)
  int64_t big[2] = {int64_t{1} << 60, -3};
  Tensor s = parse(make_npy(dict("<i8", "(2,)"), le_bytes(big, 16)), DType::kShape);
  EXPECT_EQ(s.at_int(0), int64_t{1} << 60);
}

TEST(Npy, RangeChecks) {
  int64_t in48[2] = {(int64_t{1} << 47) - 1, -(int64_t{1} << 47)};
  EXPECT_EQ(parse(make_npy(dict("<i8", "(2,)"), le_bytes(in48, 16))).dtype(), DType::kInt48);
  int64_t out48[2] = {0, int64_t{1} << 47};
  expect_error(make_npy(dict("<i8", "(2,)"), le_bytes(out48, 16)), ErrorCode::kInvalidArgument,
               "value 140737488355328 at flat index 1 is outside the i48 range");
  expect_error(make_npy(dict("<i8", "(2,)"), le_bytes(out48, 16)), ErrorCode::kInvalidArgument, "i48 range",
               DType::kInt48);
  std::vector<uint8_t> in4 = {0xf8, 0x07, 0x00};  // -8, 7, 0
  EXPECT_EQ(parse(make_npy(dict("|i1", "(3,)"), in4), DType::kInt4).to_ints(),
            (std::vector<int64_t>{-8, 7, 0}));
  expect_error(make_npy(dict("|i1", "(2,)"), {0x00, 0x08}), ErrorCode::kInvalidArgument,
               "outside the i4 range", DType::kInt4);
  expect_error(make_npy(dict("|i1", "(1,)"), {0xf7}), ErrorCode::kInvalidArgument, "value -9", DType::kInt4);
}

TEST(Npy, BoolsAreNormalised) {
  Tensor t = parse(make_npy(dict("|b1", "(3,)"), {0, 1, 7}));
  EXPECT_EQ(t.bytes()[2], 1);
  EXPECT_EQ(t.to_ints(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(Npy, TypeMismatchWithExpected) {
  float v[1] = {1};
  expect_error(make_npy(dict("<f4", "(1,)"), le_bytes(v, 4)), ErrorCode::kInvalidArgument,
               "the file holds '<f4' (f32), expected i32 stored as '<i4'", DType::kInt32);
  expect_error(make_npy(dict("<f4", "(1,)"), le_bytes(v, 4)), ErrorCode::kInvalidArgument, "expected bf16",
               DType::kBf16);
  expect_error(make_npy(dict("<i2", "(2,)"), {0, 0, 0, 0}), ErrorCode::kInvalidArgument, "expected f16",
               DType::kFp16);
}

TEST(Npy, UnsupportedDTypes) {
  std::vector<uint8_t> eight(8, 0);
  expect_error(make_npy(dict("<c8", "(1,)"), eight), ErrorCode::kUnsupported, "complex");
  expect_error(make_npy(dict("|O", "(1,)"), eight), ErrorCode::kUnsupported, "objects");
  expect_error(make_npy(dict("<U2", "(1,)"), eight), ErrorCode::kUnsupported, "unicode");
  expect_error(make_npy(dict("|S8", "(1,)"), eight), ErrorCode::kUnsupported, "byte strings");
  expect_error(make_npy(dict("<f8", "(1,)"), eight), ErrorCode::kUnsupported, "float64");
  expect_error(make_npy(dict("<u4", "(2,)"), eight), ErrorCode::kUnsupported, "unsigned");
  expect_error(make_npy(dict("<M8[ns]", "(1,)"), eight), ErrorCode::kUnsupported, "dates");
  expect_error(make_npy(dict("<i3", "(1,)"), {0, 0, 0}), ErrorCode::kUnsupported, "'<i3'");
  expect_error(make_npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", {0, 0, 0, 0}),
               ErrorCode::kUnsupported, "structured");
}

TEST(Npy, FortranOrder) {
  std::vector<uint8_t> four(16, 0);
  expect_error(make_npy(dict("<f4", "(2, 2)", "True"), four), ErrorCode::kUnsupported, "Fortran-order");
  // Rank 0 and 1 arrays have the same layout in both orders.
  EXPECT_EQ(parse(make_npy(dict("<f4", "(4,)", "True"), four)).shape(), Shape{4});
}

TEST(Npy, BadHeaders) {
  std::vector<uint8_t> four(4, 0);
  auto parse_err = [&](const std::string& d, const std::string& needle) {
    expect_error(make_npy(d, four), ErrorCode::kParse, needle);
  };
  parse_err("{'descr': '<f4', 'fortran_order': False}", "lacks 'shape'");
  parse_err("{'descr': '<f4', 'shape': (1,)}", "lacks 'fortran_order'");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'");
  parse_err("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
            "duplicate key 'descr'");
  parse_err("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "must be a tuple");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integer");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) x}", "expected ',' or '}'");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "after the header dict");
  parse_err("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'");
  parse_err("['descr']", "expected '{'");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}",
            "duplicate key 'shape'");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", "non-negative integer");
  parse_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\x01", "after the header dict");
  parse_err("{'descr': '<f\\4', 'fortran_order': False, 'shape': (1,)}", "unexpected character");
  parse_err("{'descr': '', 'fortran_order': False, 'shape': (1,)}", "empty dtype");
  parse_err("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", "True or False");
}

TEST(Npy, OtherValidHeaderSpellings) {
  float v = 2;
  // Double quotes, keys in another order, no trailing comma, no padding (data unaligned).
  Tensor t =
      parse(make_npy("{\"shape\": (1,), \"fortran_order\": False, \"descr\": \"<f4\"}", le_bytes(&v, 4)));
  EXPECT_EQ(t.at_double(0), 2.0);
  Tensor u = parse(make_npy(dict("<f4", "( 1 , )"), le_bytes(&v, 4), 1, false));
  EXPECT_EQ(u.at_double(0), 2.0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(u.bytes()) % 4, 0u);
  // Python 2 era long suffix.
  EXPECT_EQ(parse(make_npy(dict("<f4", "(1L,)"), le_bytes(&v, 4))).shape(), Shape{1});
}

TEST(Npy, PreambleErrors) {
  std::vector<uint8_t> good = make_npy(dict("<f4", "(1,)"), {0, 0, 0, 0});
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  expect_error(bad, ErrorCode::kParse, "magic");
  bad = good;
  bad[6] = 4;
  expect_error(bad, ErrorCode::kUnsupported, "format version 4.0");
  bad = good;
  bad[7] = 1;
  expect_error(bad, ErrorCode::kUnsupported, "format version 1.1");
  bad = good;
  bad[8] = 0xff;
  bad[9] = 0xff;  // header length past the end
  expect_error(bad, ErrorCode::kParse, "truncated");
  std::vector<uint8_t> no_newline = good;
  no_newline[no_newline.size() - 5] = ' ';
  expect_error(no_newline, ErrorCode::kParse, "newline");
}

TEST(Npy, DataSizeErrors) {
  expect_error(make_npy(dict("<f4", "(2,)"), {0, 0, 0, 0}), ErrorCode::kParse,
               "needs 8 data bytes, the file has 4");
  expect_error(make_npy(dict("<f4", "(1,)"), {0, 0, 0, 0, 9}), ErrorCode::kParse, "1 unexpected bytes after");
  expect_error(make_npy(dict("<f4", "(4611686018427387904, 4)"), {}), ErrorCode::kParse, "too many elements");
  expect_error(make_npy(dict("<f4", "(99999999999999999999,)"), {}), ErrorCode::kParse, "64 bits");
  expect_error(make_npy(dict("<f4", "(1152921504606846976, 2)"), {}), ErrorCode::kParse,
               "needs 9223372036854775808");
  std::string many = "(";
  for (int i = 0; i < 70; ++i) many += "1, ";
  expect_error(make_npy(dict("<f4", many + ")"), {0, 0, 0, 0}), ErrorCode::kParse, "dimensions");
}

// Every truncation of a valid file and random corruptions of its header must give an Error,
// never a crash (run under the sanitizer build to catch reads out of bounds).
TEST(Npy, FuzzTruncationsAndHeaderBytes) {
  float vals[6] = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> good = make_npy(dict("<f4", "(2, 3)"), le_bytes(vals, 24));
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_THROW(parse(cut), Error) << "truncated to " << n;
  }
  std::mt19937 rng(1234);
  size_t header_end = good.size() - 24;
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> v = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) v[rng() % header_end] = static_cast<uint8_t>(rng());
    if (rng() % 8 == 0) v.resize(rng() % v.size());
    try {
      Tensor t = parse(v);
      // Whatever was accepted must be self-consistent.
      ASSERT_EQ(t.byte_size(), t.type().byte_size());
      ++ok;
    } catch (const Error&) {
      ++failed;
    }
  }
  EXPECT_GT(failed, 0);
  std::printf("fuzz: %d accepted, %d rejected\n", ok, failed);
}

TEST(Npy, BorrowsAlignedBytesAndCopiesOthers) {
  std::vector<float> vals(16, 1.25f);
  std::vector<uint8_t> file = make_npy(dict("<f4", "(16,)"), le_bytes(vals.data(), 64));
  Buffer b = to_buffer(file);
  Tensor t = parse_npy(b, "mem.npy");
  EXPECT_EQ(t.bytes(), b.data() + (file.size() - 64));  // in place
  EXPECT_FALSE(t.buffer().writable());
  // Shift by one byte: misaligned for f32, so copied into an aligned buffer.
  Buffer shifted = Buffer::allocate(file.size() + 1);
  std::memcpy(shifted.mutable_data() + 1, file.data(), file.size());
  Buffer view = Buffer::wrap(nullptr, shifted.data() + 1, file.size());
  Tensor c = parse_npy(view, "mem.npy");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.bytes()) % 4, 0u);
  EXPECT_EQ(c.at_double(15), 1.25);
}

// ---- Files -----------------------------------------------------------------------------------

TEST(NpyFile, WriteThenReadAndMapLarge) {
  TempDir dir;
  std::vector<double> vals(40000);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<double>(i) * 0.5;
  Tensor t = Tensor::from_doubles({DType::kFp32, {200, 200}}, vals);
  std::string path = dir.path() + "/big.npy";
  write_npy(path, t);
  Tensor r = read_npy(path, DType::kFp32);
  EXPECT_TRUE(r.identical(t));
  EXPECT_FALSE(r.buffer().writable());  // memory-mapped in place
  Tensor small = Tensor::from_doubles({DType::kFp16, {3}}, std::vector<double>{1, 2, 3});
  write_npy(dir.path() + "/small.npy", small);
  Tensor rs = read_npy(dir.path() + "/small.npy");
  EXPECT_TRUE(rs.identical(small));
  EXPECT_TRUE(rs.buffer().writable());  // read into an owned buffer
  // No temporary files are left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);
  // Overwriting replaces the file.
  write_npy(path, small);
  EXPECT_TRUE(read_npy(path).identical(small));
}

TEST(NpyFile, IoErrors) {
  TempDir dir;
  try {
    read_npy(dir.path() + "/missing.npy");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("missing.npy"), std::string::npos);
  }
  EXPECT_THROW(read_npy(dir.path()), Error);
  try {
    write_npy(dir.path() + "/no/such/dir/x.npy", Tensor::zeros({DType::kInt8, {1}}));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("x.npy"), std::string::npos);
  }
  // Truncated file on disk.
  std::vector<uint8_t> f = encode_npy(Tensor::zeros({DType::kInt32, {10}}));
  f.resize(f.size() - 3);
  std::string p = dir.path() + "/trunc.npy";
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<long>(f.size()));
  try {
    read_npy(p);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("trunc.npy: truncated .npy file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft
