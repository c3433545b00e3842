// The VGF container: round trips (IR -> container -> bytes -> container gives identical tables and
// byte-identical rewrites), the layout Weft writes, memory-mapped constants that are never
// copied, older inputs built by hand (old magic, unaligned sections, the legacy FlatBuffers
// constant section), each class of bad input with its message, the JSON dump and the CLI.
#include <gtest/gtest.h>
#include <flatbuffers/flatbuffers.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "weft/text.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

const std::string kExample = std::string(WEFT_SOURCE_DIR) + "/examples/tiny_cnn/tiny_cnn.weft";

// Two inputs, two outputs, graph constants of two element types.
constexpr const char* kModel = R"(graph @main(%x: f32[2,3], %y: i32[4]) -> (%s, %p) {
  %w: f32[2,3] = CONST() {values = [1, 2, 3, 4, 5, 6]}
  %s: f32[2,3] = ADD(%x, %w)
  %k: i32[4] = CONST() {values = [7, 8, 9, 10]}
  %p: i32[4] = ADD(%y, %k)
  return %s, %p
}
)";

vgf::BuildOptions all_graph_constants() {
  vgf::BuildOptions o;
  o.encode.inline_constant_max_elements = 0;
  return o;
}

vgf::Container model_container() { return vgf::from_module(parse_weft(kModel), all_graph_constants()); }

// Temporary directories of this suite are named weft_vgf_test.XXXXXX.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_vgf_test") {}
};

Buffer to_buffer(const Bytes& b) {
  Buffer buf = Buffer::allocate(b.size());
  if (!b.empty()) std::memcpy(buf.mutable_data(), b.data(), b.size());
  return buf;
}

vgf::Container parse_bytes(const Bytes& b, vgf::ReadOptions o = {}) { return vgf::parse(to_buffer(b), "test.vgf", o); }

Bytes read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

template <class T>
T get(const Bytes& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
template <class T>
void put(Bytes& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// Header field offsets of section i (0 modules, 1 sequence, 2 resources, 3 constants).
size_t sec_off(int i) { return 16 + 16 * static_cast<size_t>(i); }
size_t sec_size(int i) { return 24 + 16 * static_cast<size_t>(i); }

// Expects parse() of `b` to throw an Error of `code` whose message contains `needle`.
void expect_error(const Bytes& b, ErrorCode code, const std::string& needle, vgf::ReadOptions o = {}) {
  try {
    parse_bytes(b, o);
    ADD_FAILURE() << "no error; expected one containing: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    EXPECT_EQ(e.location().file, "test.vgf");
  }
}

void expect_check_error(const vgf::Container& c, const std::string& needle) {
  Bytes b = vgf::serialize(c, {.check = false});
  expect_error(b, ErrorCode::kVerify, needle);
}

// ---- Round trips ---------------------------------------------------------------------------------

TEST(VgfRoundTrip, TablesOfAModel) {
  vgf::Container c = model_container();
  ASSERT_EQ(c.modules.size(), 1u);
  EXPECT_EQ(c.modules[0].type, vgf::ModuleType::kGraph);
  EXPECT_EQ(c.modules[0].entry_point, "main");
  ASSERT_EQ(c.resources.size(), 6u);  // 2 inputs, 2 outputs, 2 constants
  EXPECT_EQ(c.resources[0].category, vgf::ResourceCategory::kInput);
  EXPECT_EQ(c.resources[0].vk_format, vgf::format::kR32Sfloat);
  EXPECT_EQ(c.resources[0].vk_descriptor_type, vgf::kDescriptorTypeTensorARM);
  EXPECT_EQ(c.resources[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.resources[0].strides, (std::vector<int64_t>{12, 4}));
  EXPECT_EQ(c.resources[1].vk_format, vgf::format::kR32Sint);
  EXPECT_EQ(c.resources[2].category, vgf::ResourceCategory::kOutput);
  EXPECT_EQ(c.resources[4].category, vgf::ResourceCategory::kConstant);
  EXPECT_EQ(c.resources[4].vk_descriptor_type, vgf::kNoDescriptorType);
  ASSERT_EQ(c.constants.size(), 2u);
  EXPECT_EQ(c.constants[0].mrt_index, 4u);
  EXPECT_EQ(c.constants[0].data.size(), 24u);
  EXPECT_EQ(c.constants[1].data.size(), 16u);
  const vgf::Sequence& q = c.sequence;
  ASSERT_EQ(q.segments.size(), 1u);
  EXPECT_EQ(q.segments[0].constants, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(q.segments[0].dispatch_shape, (std::vector<uint32_t>{0, 0, 0}));
  ASSERT_EQ(q.segments[0].set_infos.size(), 1u);
  // Inputs take bindings 0..I-1 and outputs I..I+O-1 (docs/spirv.md), all in set 0.
  EXPECT_EQ(q.segments[0].set_infos[0].bindings,
            (std::vector<vgf::BindingSlot>{{0, 0}, {1, 1}, {2, 2}, {3, 3}}));
  EXPECT_EQ(q.input_names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(q.output_names, (std::vector<std::string>{"s", "p"}));

  Bytes bytes = vgf::serialize(c);
  vgf::Container r = parse_bytes(bytes);
  EXPECT_TRUE(vgf::equal_tables(c, r));
  EXPECT_EQ(r.header.version, (vgf::Version{0, 4, 3}));
  EXPECT_FALSE(r.header.old_magic);
  EXPECT_EQ(vgf::serialize(r), bytes) << "rewriting what was read must give the same bytes";
}

TEST(VgfRoundTrip, CompiledExampleThroughFiles) {
  TempDir dir;
  Module m = load_weft(kExample);
  vgf::Container c = vgf::from_module(m);
  vgf::save(c, dir.file("a.vgf"));
  vgf::Container r = vgf::load(dir.file("a.vgf"));
  EXPECT_TRUE(vgf::equal_tables(c, r));
  // Byte-identical rewrite, also over the file still mapped by `r`.
  vgf::save(r, dir.file("b.vgf"));
  EXPECT_EQ(read_all(dir.file("a.vgf")), read_all(dir.file("b.vgf")));
  vgf::save(r, dir.file("a.vgf"));
  EXPECT_EQ(read_all(dir.file("a.vgf")), read_all(dir.file("b.vgf")));
  EXPECT_TRUE(vgf::equal_tables(c, r));
  // The constants are the example's weights, typed by their resources.
  std::vector<spirv::GraphConstant> gcs = vgf::graph_constants(r, 0);
  ASSERT_EQ(gcs.size(), 2u);
  EXPECT_EQ(gcs[0].id, 0u);
  EXPECT_EQ(gcs[0].tensor.type().str(), "f32[4,3,3,3]");
  EXPECT_EQ(gcs[1].tensor.type().str(), "f32[1,64,10]");
  EXPECT_TRUE(gcs[0].tensor.buffer().same_storage(r.constants[0].data));
}

TEST(VgfRoundTrip, DecodesBackToTheModule) {
  Module m = parse_weft(kModel);
  vgf::Container r = parse_bytes(vgf::serialize(vgf::from_module(m, all_graph_constants())));
  Module back = vgf::to_module(r, 0, "test.vgf");
  verify_or_throw(back);
  EXPECT_EQ(print_weft(back), print_weft(m));
}

TEST(VgfRoundTrip, EveryElementTypeHasAFormat) {
  for (DType t : {DType::kBool, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt48, DType::kFp8E4M3,
                  DType::kFp8E5M2, DType::kFp16, DType::kBf16, DType::kFp32}) {
    std::optional<uint32_t> f = vgf::format_of(t);
    ASSERT_TRUE(f) << dtype_name(t);
    EXPECT_EQ(vgf::dtype_of(*f), t);
    EXPECT_EQ(vgf::element_size(*f), storage_size(t));
  }
  EXPECT_FALSE(vgf::format_of(DType::kInt4));
  EXPECT_EQ(vgf::dtype_of(vgf::format::kR8Uint), DType::kInt8);
  EXPECT_EQ(vgf::format_name(vgf::format::kR16SfloatBfloat16ARM), "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM");
}

// ---- The layout Weft writes ----------------------------------------------------------------------

TEST(VgfLayout, HeaderSectionsAndConstants) {
  vgf::Container c = model_container();
  Bytes b = vgf::serialize(c);
  ASSERT_GE(b.size(), vgf::kHeaderSize);
  EXPECT_EQ(std::memcmp(b.data(), "VGF1", 4), 0);
  EXPECT_EQ(get<uint16_t>(b, 4), vgf::kVkHeaderVersion);
  EXPECT_EQ(b[8], 0);
  EXPECT_EQ(b[9], 4);
  EXPECT_EQ(b[10], 3);
  for (size_t i = 80; i < 128; ++i) EXPECT_EQ(b[i], 0) << "reserved byte " << i;
  uint64_t prev_end = vgf::kHeaderSize;
  for (int i = 0; i < 4; ++i) {
    uint64_t off = get<uint64_t>(b, sec_off(i)), size = get<uint64_t>(b, sec_size(i));
    EXPECT_EQ(off % 8, 0u) << "section " << i;
    EXPECT_GE(off, prev_end) << "sections follow the header in order";
    EXPECT_LT(off - prev_end, 8u) << "only alignment padding between sections";
    prev_end = off + size;
  }
  EXPECT_EQ(prev_end, b.size());
  uint64_t k = get<uint64_t>(b, sec_off(3));
  EXPECT_EQ(std::memcmp(b.data() + k, "CONST00\0", 8), 0);
  EXPECT_EQ(get<uint64_t>(b, k + 8), 2u);
  // Records: mrt_index, sparsity -1, unpadded size, offset of 8-aligned payloads.
  EXPECT_EQ(get<uint32_t>(b, k + 16), 4u);
  EXPECT_EQ(get<int32_t>(b, k + 20), -1);
  EXPECT_EQ(get<uint64_t>(b, k + 24), 24u);
  EXPECT_EQ(get<uint64_t>(b, k + 32), 0u);
  EXPECT_EQ(get<uint64_t>(b, k + 40 + 8), 16u);
  EXPECT_EQ(get<uint64_t>(b, k + 40 + 16), 24u);
  float first;
  std::memcpy(&first, b.data() + k + 16 + 48, 4);
  EXPECT_EQ(first, 1.0f);
}

TEST(VgfLayout, PayloadsArePaddedToEightBytes) {
  Module m = parse_weft(R"(graph @main(%x: i32[3]) -> (%z) {
  %w: i32[3] = CONST() {values = [1, 2, 3]}
  %y: i32[3] = ADD(%x, %w)
  %v: i32[3] = CONST() {values = [4, 5, 6]}
  %z: i32[3] = ADD(%y, %v)
  return %z
}
)");
  vgf::Container c = vgf::from_module(m, all_graph_constants());
  Bytes b = vgf::serialize(c);
  uint64_t k = get<uint64_t>(b, sec_off(3));
  uint64_t count = get<uint64_t>(b, k + 8);
  ASSERT_GE(count, 1u);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(get<uint64_t>(b, k + 24), 12u);       // unpadded size
  EXPECT_EQ(get<uint64_t>(b, k + 40 + 16), 16u);  // the next payload starts 8-aligned
  EXPECT_EQ(get<uint64_t>(b, sec_size(3)), 16 + 2 * 24 + 16 + 16u);
  EXPECT_EQ(b.size() % 8, 0u);
}

// ---- Memory-mapped constants -------------------------------------------------------------------

// The path of the mapping of this process that contains `p` ("" if none).
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream ls(line);
    std::string range, perms, off, dev, inode, path;
    ls >> range >> perms >> off >> dev >> inode;
    std::getline(ls >> std::ws, path);
    uintptr_t lo = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    uintptr_t hi = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (a >= lo && a < hi) return path;
  }
  return "";
}

TEST(VgfMmap, ConstantsPointIntoTheMappedFile) {
  TempDir dir;
  vgf::save(vgf::from_module(load_weft(kExample)), dir.file("m.vgf"));
  vgf::Container r = vgf::load(dir.file("m.vgf"));
  ASSERT_EQ(r.constants.size(), 2u);
  const std::string real = fs::canonical(dir.file("m.vgf")).string();
  for (const vgf::Constant& k : r.constants) {
    EXPECT_EQ(mapping_of(k.data.data()), real) << "constant data must be a view of the file's mapping";
    EXPECT_FALSE(k.data.writable());
  }
  // Each constant sits at its file offset relative to the others: one mapping, no copies.
  const uint8_t* base0 = r.constants[0].data.data();
  const uint8_t* base1 = r.constants[1].data.data();
  EXPECT_EQ(base1 - base0, static_cast<ptrdiff_t>((r.constants[0].data.size() + 7) / 8 * 8));
  // The mapping outlives the container: the tensors keep it.
  std::vector<spirv::GraphConstant> gcs = vgf::graph_constants(r, 0);
  r = vgf::Container();
  EXPECT_EQ(mapping_of(gcs[0].tensor.bytes()), real);
  EXPECT_NE(gcs[0].tensor.at_double(0), 12345.0);  // readable
}

TEST(VgfMmap, ParseSharesTheCallersBytes) {
  Buffer buf = to_buffer(vgf::serialize(model_container()));
  vgf::Container r = vgf::parse(buf, "mem");
  for (const vgf::Constant& k : r.constants) {
    EXPECT_GE(k.data.data(), buf.data());
    EXPECT_LE(k.data.data() + k.data.size(), buf.data() + buf.size());
  }
}

// ---- Older inputs, built by hand -----------------------------------------------------------------

TEST(VgfLegacy, OldMagic) {
  Bytes b = vgf::serialize(model_container());
  put<uint32_t>(b, 0, vgf::kOldMagic);
  vgf::Container r = parse_bytes(b);
  EXPECT_TRUE(r.header.old_magic);
  EXPECT_TRUE(vgf::equal_tables(r, model_container()));
}

// Re-lays `b` out with `shift[i]` extra bytes before section i (so offsets become unaligned) and
// the given format version.
Bytes shifted(const Bytes& b, const int shift[4], vgf::Version v) {
  Bytes out(b.begin(), b.begin() + vgf::kHeaderSize);
  out[8] = v.major;
  out[9] = v.minor;
  out[10] = v.patch;
  for (int i = 0; i < 4; ++i) {
    uint64_t off = get<uint64_t>(b, sec_off(i)), size = get<uint64_t>(b, sec_size(i));
    out.insert(out.end(), static_cast<size_t>(shift[i]), 0xAB);
    put<uint64_t>(out, sec_off(i), out.size());
    out.insert(out.end(), b.begin() + static_cast<long>(off), b.begin() + static_cast<long>(off + size));
  }
  return out;
}

TEST(VgfLegacy, UnalignedSections) {
  Bytes b = vgf::serialize(model_container());
  const int shift[4] = {1, 2, 3, 5};
  Bytes old = shifted(b, shift, {0, 4, 0});
  ASSERT_NE(get<uint64_t>(old, sec_off(0)) % 8, 0u);
  Buffer buf = to_buffer(old);
  vgf::Container r = vgf::parse(buf, "old.vgf");
  EXPECT_TRUE(vgf::equal_tables(r, model_container()));
  EXPECT_EQ(r.header.version, (vgf::Version{0, 4, 0}));
  for (const vgf::Constant& k : r.constants) {  // still views, even unaligned
    EXPECT_GE(k.data.data(), buf.data());
    EXPECT_LE(k.data.data() + k.data.size(), buf.data() + buf.size());
  }
  // Written again, it is the current layout.
  EXPECT_EQ(vgf::serialize(r), b);
}

// A FlatBuffers ConstantSection { data: [ConstantData { mrt_index, sparsity_dimension, raw }] },
// built field by field (field ids: declaration order, 4 + 2 * index for the vtable slot).
Bytes legacy_constant_section(const vgf::Container& c) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<void>> items;
  for (const vgf::Constant& k : c.constants) {
    fbb.ForceVectorAlignment(k.data.size(), 1, 8);
    auto raw = fbb.CreateVector(k.data.data(), k.data.size());
    auto start = fbb.StartTable();
    fbb.AddOffset(8, raw);
    fbb.AddElement<int64_t>(6, k.sparsity_dimension, 0);
    fbb.AddElement<uint32_t>(4, k.mrt_index, 0);
    items.push_back(flatbuffers::Offset<void>(fbb.EndTable(start)));
  }
  auto vec = fbb.CreateVector(items);
  auto start = fbb.StartTable();
  fbb.AddOffset(4, vec);
  fbb.Finish(flatbuffers::Offset<void>(fbb.EndTable(start)));
  return Bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Bytes with_constant_section(const Bytes& b, const Bytes& section, size_t pad) {
  Bytes out(b.begin(), b.begin() + static_cast<long>(get<uint64_t>(b, sec_off(3))));
  out.insert(out.end(), pad, 0);
  put<uint64_t>(out, sec_off(3), out.size());
  put<uint64_t>(out, sec_size(3), section.size());
  out.insert(out.end(), section.begin(), section.end());
  return out;
}

TEST(VgfLegacy, FlatbuffersConstantSection) {
  vgf::Container c = model_container();
  Bytes b = vgf::serialize(c);
  for (size_t pad : {0, 3}) {  // aligned and unaligned
    SCOPED_TRACE(pad);
    Buffer buf = to_buffer(with_constant_section(b, legacy_constant_section(c), pad));
    vgf::Container r = vgf::parse(buf, "legacy.vgf");
    EXPECT_EQ(r.constant_encoding, vgf::ConstantEncoding::kLegacyFlatbuffers);
    EXPECT_TRUE(vgf::equal_tables(r, c));
    for (const vgf::Constant& k : r.constants) {
      EXPECT_GE(k.data.data(), buf.data());
      EXPECT_LE(k.data.data() + k.data.size(), buf.data() + buf.size());
    }
    EXPECT_EQ(vgf::serialize(r), b) << "rewritten as CONST00";
  }
}

// ---- Bad input -------------------------------------------------------------------------------------

TEST(VgfBadInput, Header) {
  Bytes b = vgf::serialize(model_container());
  expect_error(Bytes(b.begin(), b.begin() + 100), ErrorCode::kParse, "shorter than the 128-byte VGF header");
  expect_error(Bytes(), ErrorCode::kParse, "the file is 0 bytes");
  Bytes m = b;
  m[0] = 'X';
  expect_error(m, ErrorCode::kParse, "header: magic: expected the bytes 'VGF1'");
  m = b;
  m[9] = 5;
  expect_error(m, ErrorCode::kUnsupported, "format version 0.5.3 is newer than 0.4.x");
  m = b;
  m[8] = 1;
  expect_error(m, ErrorCode::kUnsupported, "format version 1.4.3");
}

TEST(VgfBadInput, SectionBounds) {
  Bytes b = vgf::serialize(model_container());
  Bytes m = b;
  put<uint64_t>(m, sec_size(0), b.size());
  expect_error(m, ErrorCode::kParse, "module section: [128, +");
  expect_error(m, ErrorCode::kParse, "runs past the end of the " + std::to_string(b.size()) + "-byte file");
  m = b;  // offset + size overflows 64 bits
  put<uint64_t>(m, sec_off(2), UINT64_MAX - 7);
  put<uint64_t>(m, sec_size(2), 16);
  expect_error(m, ErrorCode::kParse, "model resource section: [18446744073709551608, +16) runs past the end");
  m = b;
  put<uint64_t>(m, sec_off(3), UINT64_MAX);
  expect_error(m, ErrorCode::kParse, "constant section: [18446744073709551615,");
  m = b;
  put<uint64_t>(m, sec_off(1), 64);
  expect_error(m, ErrorCode::kParse, "model sequence section: [64, +");
  expect_error(m, ErrorCode::kParse, "overlaps the 128-byte header");
  m = b;
  put<uint64_t>(m, sec_off(2), get<uint64_t>(b, sec_off(1)) + 8);
  expect_error(m, ErrorCode::kParse, "overlap");
}

TEST(VgfBadInput, BrokenFlatbuffers) {
  Bytes b = vgf::serialize(model_container());
  Bytes m = b;
  put<uint32_t>(m, get<uint64_t>(b, sec_off(0)), 0x7fffff00);  // root offset far outside
  expect_error(m, ErrorCode::kParse, "module section: not a valid FlatBuffers ModuleTable (the FlatBuffers verifier");
  m = b;  // a vector length running past the section
  uint64_t seq = get<uint64_t>(b, sec_off(1));
  for (uint64_t i = seq + 4; i < seq + get<uint64_t>(b, sec_size(1)); i += 4) put<uint32_t>(m, i, 0xffffffff);
  expect_error(m, ErrorCode::kParse, "model sequence section: not a valid FlatBuffers ModelSequenceTable");
  m = b;
  put<uint64_t>(m, sec_size(2), 3);
  expect_error(m, ErrorCode::kParse, "model resource section: 3 bytes, too small");
}

TEST(VgfBadInput, RawConstantSection) {
  Bytes b = vgf::serialize(model_container());
  const uint64_t k = get<uint64_t>(b, sec_off(3));
  Bytes m = b;
  put<uint64_t>(m, k + 8, 1000);  // count
  expect_error(m, ErrorCode::kParse, "constant section: count 1000 needs 24000 bytes of metadata records");
  m = b;
  put<uint64_t>(m, k + 8, UINT64_MAX / 2);
  expect_error(m, ErrorCode::kParse, "needs more than 2^64 bytes");
  m = b;
  put<uint64_t>(m, k + 16 + 24 + 16, 1ull << 40);  // constant 1's offset
  expect_error(m, ErrorCode::kParse, "constant section: constant 1: payload range [1099511627776, +16) runs past the end");
  m = b;
  put<uint64_t>(m, k + 16 + 8, UINT64_MAX);  // constant 0's size: offset + size overflows
  expect_error(m, ErrorCode::kParse, "constant 0: payload range [0, +18446744073709551615)");
  m = b;
  put<int32_t>(m, k + 16 + 4, -2);
  expect_error(m, ErrorCode::kParse, "constant 0: sparsity_dimension -2 is invalid");
  m = b;
  std::memcpy(m.data() + k, "CONST01", 8);
  expect_error(m, ErrorCode::kUnsupported, "layout version 'CONST01' is not CONST00");
  m = b;
  put<uint64_t>(m, sec_size(3), 12);
  expect_error(m, ErrorCode::kParse, "constant section: 12 bytes, too small for the 16-byte CONST00 header");
}

TEST(VgfBadInput, ConstantSizeDisagreesWithItsResource) {
  Bytes b = vgf::serialize(model_container());
  const uint64_t k = get<uint64_t>(b, sec_off(3));
  Bytes m = b;
  put<uint64_t>(m, k + 16 + 8, 20);  // constant 0 holds 24 bytes (f32[2,3])
  expect_error(m, ErrorCode::kVerify,
               "constant 0: 20 bytes of data, but its resource 4 (VK_FORMAT_R32_SFLOAT [2,3]) needs 24");
  vgf::Container c = model_container();
  c.constants[1].mrt_index = 0;
  expect_check_error(c, "constant 1: its resource 0 is INPUT, not CONSTANT");
  c = model_container();
  c.constants[1].mrt_index = 17;
  expect_check_error(c, "constant 1: mrt_index 17 names no resource (the resource table has 6)");
  c = model_container();
  c.constants[0].sparsity_dimension = 2;
  expect_check_error(c, "constant 0: sparsity_dimension 2 is neither -1 (dense) nor a dimension");
  c = model_container();
  c.resources[4].strides = {4, 4};
  expect_check_error(c, "resource 4 (CONSTANT): strides [4,4] are not the packed strides [12,4]");
  c = model_container();
  c.resources[4].shape = {2, -1};
  expect_check_error(c, "resource 4 (CONSTANT): shape[1] is unknown (-1)");
  c = model_container();
  c.resources[4].vk_format = 12345;
  expect_check_error(c, "resource 4 (CONSTANT): vk_format 12345 is not a tensor element format");
  c = model_container();
  c.resources[0].strides = {4};
  expect_check_error(c, "resource 0 (INPUT): 1 strides for a rank-2 shape");
  c = model_container();
  c.resources[0].shape = {2, -7};
  expect_check_error(c, "resource 0 (INPUT): shape[1] is -7");
}

TEST(VgfBadInput, BindingsAndSegments) {
  vgf::Container c = model_container();
  c.sequence.segments[0].set_infos[0].bindings[1].mrt_index = 99;
  expect_check_error(c, "segment 0 'main': set_infos[0].bindings[1]: mrt_index 99 names no resource");
  c = model_container();
  c.sequence.segments[0].inputs[0].mrt_index = 6;
  expect_check_error(c, "segment 0 'main': inputs[0]: mrt_index 6 names no resource (the resource table has 6)");
  c = model_container();
  c.sequence.outputs[1].mrt_index = 1000;
  expect_check_error(c, "model sequence: outputs[1]: mrt_index 1000 names no resource");
  c = model_container();
  c.sequence.segments[0].set_infos[0].bindings.pop_back();
  expect_check_error(c, "segment 0 'main': interface variable %");
  expect_check_error(c, "(set 0, binding 3) has no binding slot in the segment's descriptor sets");
  c = model_container();
  c.sequence.segments[0].set_infos[0].bindings[3].binding = 0;
  expect_check_error(c, "binding 0 of set 0 appears twice");
  c = model_container();
  c.sequence.segments[0].set_infos[0].bindings[0].mrt_index = 4;
  expect_check_error(c, "(set 0, binding 0) is bound to resource 4, a CONSTANT");
  c = model_container();
  c.sequence.segments[0].set_infos[0].set_index = 1;
  expect_check_error(c, "(set 0, binding 0) has no binding slot");
  c = model_container();
  c.sequence.segments[0].constants = {0};
  expect_check_error(c, "segment 0 'main': its module uses GraphConstantID 1, which is not among the segment's constants");
  c = model_container();
  c.sequence.segments[0].constants = {0, 1, 2};
  expect_check_error(c, "segment 0 'main': constants[2] is 2, but the constant section has 2 constants");
  c = model_container();
  c.sequence.segments[0].module_index = 1;
  expect_check_error(c, "segment 0 'main': module_index 1 names no module (the module table has 1)");
  c = model_container();
  c.sequence.segments[0].type = vgf::ModuleType::kCompute;
  expect_check_error(c, "a COMPUTE segment runs module 0 'main', a GRAPH module");
  c = model_container();
  c.sequence.segments[0].dispatch_shape = {1, 2};
  expect_check_error(c, "dispatch_shape has 2 entries; it has 3 (x, y, z) or none");
  c = model_container();
  c.sequence.input_names.pop_back();
  expect_check_error(c, "model sequence: 1 input_names for 2 inputs");
}

TEST(VgfBadInput, Modules) {
  vgf::Container c = model_container();
  // Code that is not a SPIR-V stream is a placeholder (Arm's test files carry one): a warning on
  // reading, an error when the graph is wanted.
  c.modules[0].spirv[0] = 0x12345678;
  std::vector<std::string> warnings = vgf::check(c, "test.vgf");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("module 0 'main': its code is not a SPIR-V stream"), std::string::npos) << warnings[0];
  EXPECT_THROW(vgf::to_module(c, 0, "test.vgf"), Error);
  c = model_container();
  c.modules[0].code_type = vgf::CodeType::kGlsl;
  c.modules[0].spirv.clear();
  expect_check_error(c, "module 0 'main': a GRAPH module's code must be SPIR-V, not GLSL");
  // An entry_point other than the OpGraphEntryPointARM's name: the SDK's samples write "main".
  c = model_container();
  c.modules[0].entry_point = "other";
  warnings = vgf::check(c, "test.vgf");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("entry_point 'other' is not the name of its OpGraphEntryPointARM ('main')"),
            std::string::npos);
  c = model_container();
  c.modules[0].spirv.resize(7);  // header + a truncated instruction
  c.modules[0].spirv[5] = 0x00100011;
  expect_error(vgf::serialize(c, {.check = false}), ErrorCode::kVerify,
               "segment 0 'main': its module 0 is not a readable SPIR-V stream: word 5",
               {.validate_modules = false});
}

TEST(VgfBadInput, ModuleFailingValidation) {
  // A graph module whose graph constant has no type: the validator must reject it.
  vgf::Container c = model_container();
  std::vector<spirv::Diagnostic> d = spirv::validate(std::vector<uint32_t>{0x07230203, 0x00010600, 0, 1, 0});
  if (d.empty()) GTEST_SKIP() << "spirv::validate does not report yet";
  c.modules[0].spirv = {0x07230203, 0x00010600, 0, 1, 0};
  expect_check_error(c, "module 0 'main': the SPIR-V module fails validation");
}

TEST(VgfBadInput, ContainerThatCannotBeWritten) {
  vgf::Container c = model_container();
  c.constants[0].mrt_index = 99;
  try {
    vgf::serialize(c);
    ADD_FAILURE() << "serialize() must check the container";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify);
    EXPECT_NE(std::string(e.what()).find("constant 0: mrt_index 99"), std::string::npos) << e.what();
  }
}

TEST(VgfBadInput, MissingFile) {
  try {
    vgf::load("/nonexistent/x.vgf");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.location().file, "/nonexistent/x.vgf");
  }
}

// Every prefix and many single-byte corruptions are reported as a weft::Error, never a crash.
TEST(VgfBadInput, TruncationsAndCorruptionsNeverCrash) {
  Bytes b = vgf::serialize(model_container());
  for (size_t n = 0; n < b.size(); n += 7) {
    try {
      parse_bytes(Bytes(b.begin(), b.begin() + static_cast<long>(n)));
    } catch (const Error&) {
    }
  }
  for (size_t i = 0; i < b.size(); ++i) {
    for (uint8_t x : {0x00, 0xff, 0x80}) {
      Bytes m = b;
      m[i] ^= x ? x : m[i];
      try {
        parse_bytes(m);
      } catch (const Error&) {
      }
    }
  }
}

// Inputs the fuzzer found (fuzz/vgf_fuzz.cpp), each once a crash or sanitizer report.
TEST(VgfBadInput, FuzzerRegressions) {
  const fs::path dir = fs::path(WEFT_SOURCE_DIR) / "tests/package/regressions";
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    try {
      vgf::Container c = vgf::load(e.path().string());
      (void)vgf::to_json(c, {.disassemble = true});
      vgf::Container again = parse_bytes(vgf::serialize(c));
      EXPECT_TRUE(vgf::equal_tables(c, again));
    } catch (const Error&) {
    }
    ++n;
  }
  EXPECT_GE(n, 1u);
}

// ---- JSON dump ---------------------------------------------------------------------------------

TEST(VgfDump, WholeContainerAsJson) {
  vgf::Container r = parse_bytes(vgf::serialize(model_container()));
  std::string text = vgf::to_json(r);
  EXPECT_EQ(text, vgf::to_json(parse_bytes(vgf::serialize(model_container()))));
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["header"]["magic"], "VGF1");
  EXPECT_EQ(j["header"]["version"], "0.4.3");
  EXPECT_EQ(j["header"]["sections"]["modules"]["offset"], 128);
  EXPECT_EQ(j["modules"][0]["type"], "GRAPH");
  EXPECT_FALSE(j["modules"][0].contains("disassembly"));
  EXPECT_EQ(j["resources"].size(), 6u);
  EXPECT_EQ(j["resources"][4]["category"], "CONSTANT");
  EXPECT_EQ(j["resources"][0]["vk_descriptor_type"], "VK_DESCRIPTOR_TYPE_TENSOR_ARM");
  EXPECT_EQ(j["resources"][1]["vk_format"], "VK_FORMAT_R32_SINT");
  EXPECT_EQ(j["sequence"]["segments"][0]["set_infos"][0]["bindings"].size(), 4u);
  EXPECT_EQ(j["sequence"]["input_names"][1], "y");
  EXPECT_EQ(j["constants"]["encoding"], "CONST00");
  EXPECT_EQ(j["constants"]["entries"][0]["size"], 24);
  EXPECT_EQ(j["constants"]["total_size"], 40);
  nlohmann::json d = nlohmann::json::parse(vgf::to_json(r, {.disassemble = true}));
  EXPECT_TRUE(d["modules"][0].contains("disassembly") || d["modules"][0].contains("disassembly_error"));
}

// ---- The weft tool -------------------------------------------------------------------------------

struct CliRun {
  int status;
  std::string out;
  std::string err;
};

CliRun run(const std::string& args, const TempDir& dir) {
  std::string out = dir.file("stdout"), err = dir.file("stderr");
  int rc = std::system((std::string(WEFT_CLI) + " " + args + " >" + out + " 2>" + err).c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

TEST(VgfCli, CompileAndDump) {
  TempDir dir;
  CliRun c = run("compile " + kExample + " -o " + dir.file("m.vgf"), dir);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("VGF 0.4.3"), std::string::npos) << c.out;
  vgf::Container r = vgf::load(dir.file("m.vgf"));
  EXPECT_TRUE(vgf::equal_tables(r, vgf::from_module(load_weft(kExample))));
  // --emit vgf with another extension
  CliRun e = run("compile " + kExample + " --emit vgf -o " + dir.file("m.bin"), dir);
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_EQ(read_all(dir.file("m.bin")), read_all(dir.file("m.vgf")));

  CliRun d = run("dump " + dir.file("m.vgf"), dir);
  ASSERT_EQ(d.status, 0) << d.err;
  nlohmann::json j = nlohmann::json::parse(d.out);
  EXPECT_EQ(j["constants"]["count"], 2);
  EXPECT_EQ(j["sequence"]["output_names"][0], "logits");
  CliRun d2 = run("dump " + dir.file("m.vgf") + " -o " + dir.file("m.json"), dir);
  ASSERT_EQ(d2.status, 0) << d2.err;
  std::ifstream jf(dir.file("m.json"));
  std::stringstream ss;
  ss << jf.rdbuf();
  EXPECT_EQ(ss.str(), d.out);

  CliRun h = run("dump --help", dir);
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("Usage: weft dump"), std::string::npos);
}

TEST(VgfCli, DumpErrors) {
  TempDir dir;
  {
    std::ofstream f(dir.file("bad.vgf"), std::ios::binary);
    f << std::string(200, 'x');
  }
  CliRun r = run("dump " + dir.file("bad.vgf"), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("bad.vgf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("header: magic"), std::string::npos) << r.err;
  EXPECT_EQ(run("dump", dir).status, 2);
  EXPECT_EQ(run("dump a.vgf b.vgf", dir).status, 2);
  EXPECT_EQ(run("dump --bogus x.vgf", dir).status, 2);
  EXPECT_EQ(run("compile " + kExample + " --emit onnx -o x", dir).status, 2);
}

}  // namespace
}  // namespace weft
