// TOSA 1.0 model files (.tosa): FlatBuffer <-> Weft IR. Attributes are read and written by field
// name: the operator table (weft/ops.h) names each attribute as the specification does, and so do
// the attribute tables of src/package/tosa.fbs, whose type tables flatc generates
// (--reflect-names). Special cases: CONST / CONST_SHAPE values live in the output tensor (or the
// block's `shapes` table), VARIABLE's in a tensor marked `variable`.
#include "weft/tosa_file.h"

#include <flatbuffers/flatbuffers.h>
#include <flatbuffers/minireflect.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>

#include "package/tosa_generated.h"
#include "weft/verify.h"

namespace weft::tosa_file {

namespace fb = weft::tosafb;

namespace {

// ---- Element types -------------------------------------------------------------------------------

struct TypePair {
  fb::DType file;
  DType weft;
};
constexpr TypePair kTypes[] = {
    {fb::DType_BOOL, DType::kBool},   {fb::DType_INT4, DType::kInt4},       {fb::DType_INT8, DType::kInt8},
    {fb::DType_INT16, DType::kInt16}, {fb::DType_INT32, DType::kInt32},     {fb::DType_INT48, DType::kInt48},
    {fb::DType_FP32, DType::kFp32},   {fb::DType_FP16, DType::kFp16},       {fb::DType_BF16, DType::kBf16},
    {fb::DType_SHAPE, DType::kShape}, {fb::DType_FP8E4M3, DType::kFp8E4M3}, {fb::DType_FP8E5M2, DType::kFp8E5M2},
};

std::optional<DType> weft_type(uint32_t t) {
  for (const TypePair& p : kTypes)
    if (static_cast<uint32_t>(p.file) == t) return p.weft;
  return std::nullopt;
}
fb::DType file_type(DType t) {
  for (const TypePair& p : kTypes)
    if (p.weft == t) return p.file;
  return fb::DType_UNKNOWN;
}

// Bytes of `n` elements in the file: int4 packs two per byte (low nibble first), int48 takes six.
size_t file_bytes(DType t, size_t n) {
  if (t == DType::kInt4) return (n + 1) / 2;
  if (t == DType::kInt48) return n * 6;
  return n * storage_size(t);
}

// Weft's storage of the same data (see weft/dtype.h).
Tensor decode(DType t, const TensorType& type, const uint8_t* data, const Buffer& file) {
  const size_t n = static_cast<size_t>(type.num_elements());
  if (t == DType::kInt4 || t == DType::kInt48 || t == DType::kBool) {
    Buffer out = Buffer::allocate(type.byte_size());
    uint8_t* o = out.mutable_data();
    for (size_t i = 0; i < n; ++i) {
      if (t == DType::kInt4) {
        const uint8_t nibble = (data[i / 2] >> (i % 2 ? 4 : 0)) & 0xF;
        o[i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int8_t>(nibble << 4) >> 4));
      } else if (t == DType::kInt48) {
        uint64_t v = 0;
        for (int b = 0; b < 6; ++b) v |= uint64_t{data[6 * i + b]} << (8 * b);
        const int64_t s = static_cast<int64_t>(v << 16) >> 16;
        std::memcpy(o + 8 * i, &s, 8);
      } else {
        o[i] = data[i] ? 1 : 0;
      }
    }
    return Tensor(type, out);
  }
  // Same encoding: shared with the file's bytes.
  return Tensor(type, file.slice(static_cast<size_t>(data - file.data()), type.byte_size()));
}

std::vector<uint8_t> encode(const Tensor& t) {
  const DType d = t.dtype();
  const size_t n = static_cast<size_t>(t.num_elements());
  const uint8_t* in = t.buffer().data();
  std::vector<uint8_t> out(file_bytes(d, n), 0);
  if (d == DType::kInt4) {
    for (size_t i = 0; i < n; ++i) out[i / 2] |= static_cast<uint8_t>((in[i] & 0xF) << (i % 2 ? 4 : 0));
  } else if (d == DType::kInt48) {
    for (size_t i = 0; i < n; ++i) std::memcpy(&out[6 * i], in + 8 * i, 6);  // little-endian low 6 bytes
  } else if (n) {
    std::memcpy(out.data(), in, out.size());
  }
  return out;
}

// ---- Reading --------------------------------------------------------------------------------------

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& message, Location at = {}) {
  at.file = source;
  throw Error(code, message, at);
}

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

struct BlockReader {
  const Buffer& file;
  const std::string& source;
  const ReadOptions& options;
  const std::map<std::string, std::string>& graph_names;  // region or block name -> graph name
  const fb::TosaBasicBlock* block;
  Graph g;
  std::map<std::string, const fb::TosaTensor*> tensors;
  std::map<std::string, const fb::TosaShape*> shapes;

  Location at(int op_index = -1, const std::string& field = "") const {
    Location l;
    l.graph = g.name();
    if (op_index >= 0) l.node = "operator " + std::to_string(op_index);
    l.operand = field;
    return l;
  }
  [[noreturn]] void bad(ErrorCode code, const std::string& message, int op = -1, const std::string& field = "") const {
    fail(code, source, message, at(op, field));
  }

  TensorType type_of(const fb::TosaTensor* t) const {
    const std::string name = str(t->name());
    if (t->is_unranked()) bad(ErrorCode::kUnsupported, "tensor '" + name + "' is unranked; Weft needs static shapes");
    const std::optional<DType> d = weft_type(t->type());
    if (!d) bad(ErrorCode::kParse, "tensor '" + name + "' has unknown type " + std::to_string(t->type()));
    Shape shape;
    if (t->shape())
      for (int32_t dim : *t->shape()) {
        if (dim < 0)
          bad(ErrorCode::kUnsupported, "tensor '" + name + "' has a dynamic dimension (" + std::to_string(dim) +
                                           "); Weft needs static shapes");
        shape.push_back(dim);
      }
    // A shape value of length 0 (RESHAPE to rank 0) is written with shape [] by the conformance
    // generator: read as [0].
    if (*d == DType::kShape && shape.empty()) shape = {0};
    if (*d == DType::kShape && shape.size() != 1)
      bad(ErrorCode::kVerify, "shape tensor '" + name + "' must have rank 1, has rank " + std::to_string(shape.size()));
    TensorType type{*d, shape};
    if (type.num_elements() < 0 || type.num_elements() > (int64_t{1} << 44))
      bad(ErrorCode::kVerify, "tensor '" + name + "' holds too many elements");
    return type;
  }

  // A tensor's data: inline, or outside the FlatBuffer (offset/size); nullopt when it has none.
  std::optional<Tensor> data_of(const fb::TosaTensor* t, const TensorType& type) const {
    const std::string name = str(t->name());
    const size_t need = file_bytes(type.dtype, static_cast<size_t>(type.num_elements()));
    const uint8_t* p = nullptr;
    size_t have = 0;
    if (t->data() && t->data()->size() > 0) {
      p = t->data()->data();
      have = t->data()->size();
    } else if (t->offset() > 1) {
      if (t->offset() > file.size() || t->size() > file.size() - t->offset())
        bad(ErrorCode::kParse, "tensor '" + name + "': its data (offset " + std::to_string(t->offset()) + ", " +
                                   std::to_string(t->size()) + " bytes) lies past the end of the file (" +
                                   std::to_string(file.size()) + " bytes)");
      p = file.data() + t->offset();
      have = static_cast<size_t>(t->size());
    } else {
      if (need == 0) return Tensor::zeros(type);
      return std::nullopt;
    }
    // Writers pad data to a multiple of 8 bytes.
    if (have < need || have - need >= 8)
      bad(ErrorCode::kVerify, "tensor '" + name + "' (" + type.str() + ") has " + std::to_string(have) +
                                  " bytes of data, needs " + std::to_string(need));
    return decode(type.dtype, type, p, file);
  }

  std::vector<int64_t> shape_values(const Tensor& t) const {
    std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
    if (!v.empty()) std::memcpy(v.data(), t.buffer().data(), v.size() * 8);
    return v;
  }

  ValueId value(const std::string& name, int op, const char* role) const {
    std::optional<ValueId> v = g.find_value(name);
    if (!v)
      bad(ErrorCode::kVerify,
          std::string(role) + " '" + name + "' is neither a block input nor the output of an earlier operator", op);
    return *v;
  }

  ValueId new_value(const std::string& name, int op) {
    if (g.find_value(name)) bad(ErrorCode::kVerify, "tensor '" + name + "' is produced twice", op);
    auto it = tensors.find(name);
    if (it != tensors.end()) return g.add_value(name, type_of(it->second));
    auto s = shapes.find(name);
    if (s != shapes.end()) return g.add_value(name, TensorType{DType::kShape, {static_cast<int64_t>(s->second->rank())}});
    bad(ErrorCode::kVerify, "output '" + name + "' has no entry in the block's tensors", op);
  }

  // VARIABLE's attributes from its tensor.
  std::vector<AttrValue> variable_attrs(const fb::TosaTensor* var, int index) const {
    const std::string var_name =
        var->variable_name() && var->variable_name()->size() ? str(var->variable_name()) : str(var->name());
    const TensorType type = type_of(var);
    int64_t var_type = 0;
    for (int64_t k = 1; k <= 7; ++k)
      if (var_type_dtype(static_cast<VarType>(k)) == type.dtype) var_type = k;
    if (!var_type) bad(ErrorCode::kVerify, "variable '" + var_name + "' has a type variables cannot have", index);
    std::optional<Tensor> init = data_of(var, type);
    return make_attrs(Op::VARIABLE, {{"name", var_name},
                                     {"var_shape", std::vector<int64_t>(type.shape.begin(), type.shape.end())},
                                     {"type", var_type},
                                     {"initial_value", init ? *init : Tensor::zeros(type)}});
  }

  bool entry = false;
  void read();
  Attrs attributes(const fb::TosaOperator* o, Op op, const std::vector<ValueId>& inputs, int index) const;
};

Attrs BlockReader::attributes(const fb::TosaOperator* o, Op op, const std::vector<ValueId>& inputs, int index) const {
  const OpDef& def = op_def(op);
  Attrs named;
  if (def.attrs.empty()) return named;
  const flatbuffers::TypeTable* union_table = fb::AttributeTypeTable();
  const uint32_t kind = o->attribute_type();
  if (kind == 0 || kind >= union_table->num_elems || !o->attribute())
    bad(ErrorCode::kVerify, std::string(def.name) + " has no attribute table", index, "attribute");
  const flatbuffers::TypeTable* tt = union_table->type_refs[union_table->type_codes[kind].sequence_ref]();
  const std::string expected = std::string(fb::EnumNamesAttribute()[static_cast<size_t>(op) + 1]);
  if (std::string(union_table->names[kind]) != expected)
    bad(ErrorCode::kVerify, std::string(def.name) + " carries a " + union_table->names[kind] + ", not a " + expected,
        index, "attribute");
  const auto* table = static_cast<const flatbuffers::Table*>(o->attribute());
  for (const AttrDef& a : def.attrs) {
    size_t j = 0;
    while (j < tt->num_elems && std::string_view(tt->names[j]) != a.name) ++j;
    if (j == tt->num_elems) continue;  // carried elsewhere (CONST values, VARIABLE's tensor)
    const auto off = static_cast<flatbuffers::voffset_t>(flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(j)));
    const bool present = table->CheckField(off);
    switch (a.kind) {
      case AttrKind::kInt:
        named.push_back({a.name, int64_t{table->GetField<int32_t>(off, 0)}});
        break;
      case AttrKind::kBool:
        named.push_back({a.name, table->GetField<uint8_t>(off, 0) != 0});
        break;
      case AttrKind::kIntList: {
        const auto* v = table->GetPointer<const flatbuffers::Vector<int32_t>*>(off);
        std::vector<int64_t> list;
        if (v) list.assign(v->begin(), v->end());
        named.push_back({a.name, list});
        break;
      }
      case AttrKind::kAccType: {
        if (!present) break;  // make_attrs names it when required
        const std::optional<DType> d = weft_type(table->GetField<uint32_t>(off, 0));
        const std::optional<AccType> acc = d ? dtype_acc_type(*d) : std::nullopt;
        if (!acc) bad(ErrorCode::kVerify, "acc_type " + std::to_string(table->GetField<uint32_t>(off, 0)) +
                                              " is not an accumulator type", index, "acc_type");
        named.push_back({a.name, static_cast<int64_t>(*acc)});
        break;
      }
      case AttrKind::kNanMode:
      case AttrKind::kResizeMode:
      case AttrKind::kRoundingMode: {
        const uint32_t v = table->GetField<uint32_t>(off, 0);
        if (v != 0) named.push_back({a.name, int64_t{v}});  // 0 (UNKNOWN): the default, or missing
        break;
      }
      case AttrKind::kScalar: {
        const auto* v = table->GetPointer<const flatbuffers::Vector<uint8_t>*>(off);
        if (inputs.empty()) bad(ErrorCode::kVerify, "no input to type attribute '" + std::string(a.name) + "'", index);
        const TensorType type{g.value(inputs[0]).type.dtype, {}};
        const size_t need = file_bytes(type.dtype, 1);
        if (!v || v->size() < need)
          bad(ErrorCode::kVerify, "attribute '" + std::string(a.name) + "' holds " + std::to_string(v ? v->size() : 0) +
                                      " bytes, a " + dtype_name(type.dtype) + " value needs " + std::to_string(need),
              index, a.name);
        named.push_back({a.name, decode(type.dtype, type, v->data(), file)});
        break;
      }
      case AttrKind::kString: {
        std::string s;
        if (tt->type_codes[j].base_type == flatbuffers::ET_STRING) {
          s = str(table->GetPointer<const flatbuffers::String*>(off));
        } else if (const auto* v = table->GetPointer<const flatbuffers::Vector<uint8_t>*>(off)) {
          s.assign(reinterpret_cast<const char*>(v->data()), v->size());
        }
        named.push_back({a.name, s});
        break;
      }
      case AttrKind::kGraph: {
        const std::string s = str(table->GetPointer<const flatbuffers::String*>(off));
        auto it = graph_names.find(s);
        if (it == graph_names.end()) bad(ErrorCode::kVerify, "no region or block named '" + s + "'", index, a.name);
        named.push_back({a.name, it->second});
        break;
      }
      default:
        break;
    }
  }
  return named;
}

void BlockReader::read() {
  if (block->tensors())
    for (const fb::TosaTensor* t : *block->tensors()) {
      const std::string name = str(t->name());
      if (name.empty()) bad(ErrorCode::kVerify, "a tensor has no name");
      if (!tensors.emplace(name, t).second) bad(ErrorCode::kVerify, "two tensors are named '" + name + "'");
    }
  if (block->shapes())
    for (const fb::TosaShape* s : *block->shapes()) shapes[str(s->name())] = s;
  const auto* ops = block->operators();
  const size_t n_ops = ops ? ops->size() : 0;

  // Constants that the block lists among its inputs with no data (fed by a test harness).
  std::set<std::string> block_inputs;
  if (block->inputs())
    for (const auto* s : *block->inputs()) block_inputs.insert(s->str());
  std::map<std::string, Tensor> fed;  // name -> data given by options.constant_data
  std::set<std::string> fed_as_input;
  for (size_t i = 0; i < n_ops; ++i) {
    const fb::TosaOperator* o = ops->Get(static_cast<flatbuffers::uoffset_t>(i));
    if ((o->op() != fb::Op_CONST && o->op() != fb::Op_CONST_SHAPE) || !o->outputs() || o->outputs()->size() != 1)
      continue;
    const std::string name = o->outputs()->Get(0)->str();
    auto t = tensors.find(name);
    if (!block_inputs.count(name) || t == tensors.end()) continue;
    const TensorType type = type_of(t->second);
    if (data_of(t->second, type)) continue;
    std::optional<Tensor> given = options.constant_data ? options.constant_data(name, type) : std::nullopt;
    if (given) {
      if (given->type() != type)
        bad(ErrorCode::kInvalidArgument, "the data given for constant '" + name + "' is " + given->type().str() +
                                             ", the tensor is " + type.str());
      fed[name] = *given;
    } else {
      fed_as_input.insert(name);
    }
  }

  // Constants of this block listed among its inputs all the same (fed or with data): produced by
  // their operator, not inputs.
  std::set<std::string> produced_constants;
  for (size_t i = 0; i < n_ops; ++i) {
    const fb::TosaOperator* o = ops->Get(static_cast<flatbuffers::uoffset_t>(i));
    if ((o->op() == fb::Op_CONST || o->op() == fb::Op_CONST_SHAPE) && o->outputs() && o->outputs()->size() == 1 &&
        !fed_as_input.count(o->outputs()->Get(0)->str()))
      produced_constants.insert(o->outputs()->Get(0)->str());
  }
  if (block->inputs())
    for (const auto* s : *block->inputs()) {
      const std::string name = s->str();
      if (fed.count(name) || produced_constants.count(name)) continue;
      auto t = tensors.find(name);
      if (t == tensors.end()) bad(ErrorCode::kVerify, "block input '" + name + "' has no entry in the block's tensors");
      if (g.find_value(name)) bad(ErrorCode::kVerify, "block input '" + name + "' is listed twice");
      g.add_input(name, type_of(t->second));
    }

  // Variables that no VARIABLE operator declares (the MLIR serializer writes only the tensors):
  // declared at the start of the entry graph, their data the initial value.
  if (entry) {
    std::set<std::string> declared;
    for (size_t i = 0; i < n_ops; ++i) {
      const fb::TosaOperator* o = ops->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (o->op() == fb::Op_VARIABLE && o->outputs())
        for (const auto* s : *o->outputs()) declared.insert(s->str());
    }
    for (const auto& [name, t] : tensors) {
      if (!t->variable() || declared.count(name)) continue;
      Node node;
      node.op = Op::VARIABLE;
      node.attrs = variable_attrs(t, -1);
      g.add_node(std::move(node));
    }
  }

  for (size_t i = 0; i < n_ops; ++i) {
    const int index = static_cast<int>(i);
    const fb::TosaOperator* o = ops->Get(static_cast<flatbuffers::uoffset_t>(i));
    const uint32_t code = o->op();
    if (code == 0 || code > static_cast<uint32_t>(fb::Op_MAX))
      bad(ErrorCode::kParse, "unknown operator code " + std::to_string(code), index);
    std::optional<Op> op = op_from_name(fb::EnumNamesOp()[code]);
    if (!op) bad(ErrorCode::kUnsupported, std::string("operator ") + fb::EnumNamesOp()[code] + " is not in Weft's table", index);
    // The MLIR serializer writes variable reads and writes as IDENTITY with the variable attribute.
    if (*op == Op::IDENTITY && o->attribute_type() == fb::Attribute_VariableReadAttribute) op = Op::VARIABLE_READ;
    if (*op == Op::IDENTITY && o->attribute_type() == fb::Attribute_VariableWriteAttribute) op = Op::VARIABLE_WRITE;
    std::vector<std::string> in_names, out_names;
    if (o->inputs())
      for (const auto* s : *o->inputs()) in_names.push_back(s->str());
    if (o->outputs())
      for (const auto* s : *o->outputs()) out_names.push_back(s->str());
    Node node;
    node.op = *op;
    if (o->location() && o->location()->text()) node.name = o->location()->text()->str();
    auto is_variable = [&](const std::string& name) {
      auto t = tensors.find(name);
      return t != tensors.end() && t->second->variable();
    };

    if (*op == Op::CONST || *op == Op::CONST_SHAPE) {
      if (out_names.size() != 1 || !in_names.empty())
        bad(ErrorCode::kVerify, std::string(op_name(*op)) + " takes no input and has one output", index);
      const std::string& name = out_names[0];
      if (fed_as_input.count(name)) continue;  // a graph input now
      std::optional<Tensor> values;
      if (auto f = fed.find(name); f != fed.end()) {
        values = f->second;
      } else if (auto t = tensors.find(name); t != tensors.end()) {
        values = data_of(t->second, type_of(t->second));
      } else if (auto s = shapes.find(name); s != shapes.end()) {
        const TensorType type{DType::kShape, {static_cast<int64_t>(s->second->rank())}};
        const auto* d = s->second->data();
        if (!d || d->size() < type.byte_size())
          bad(ErrorCode::kVerify, "shape '" + name + "' of rank " + std::to_string(s->second->rank()) + " has " +
                                      std::to_string(d ? d->size() : 0) + " bytes of data", index);
        values = decode(DType::kShape, type, d->data(), file);
      }
      if (!values) bad(ErrorCode::kVerify, "constant '" + name + "' has no data", index);
      if (*op == Op::CONST_SHAPE) {
        if (values->dtype() != DType::kShape)
          bad(ErrorCode::kVerify, "CONST_SHAPE output '" + name + "' is " + values->type().str() + ", not a shape", index);
        node.attrs = make_attrs(*op, {{"values", shape_values(*values)}});
      } else {
        node.attrs = make_attrs(*op, {{"values", *values}});
      }
      node.outputs = {new_value(name, index)};
      g.add_node(std::move(node));
      continue;
    }

    if (*op == Op::VARIABLE || *op == Op::VARIABLE_WRITE || *op == Op::VARIABLE_READ) {
      // The variable is a tensor marked `variable`, among the inputs or the outputs.
      const fb::TosaTensor* var = nullptr;
      for (const auto* list : {&in_names, &out_names})
        for (const std::string& n : *list)
          if (is_variable(n)) var = tensors.at(n);
      if (!var) bad(ErrorCode::kVerify, std::string(op_name(*op)) + " names no tensor marked as a variable", index);
      const std::string var_name = var->variable_name() && var->variable_name()->size() ? str(var->variable_name())
                                                                                         : str(var->name());
      if (*op == Op::VARIABLE) {
        node.attrs = variable_attrs(var, index);
      } else if (*op == Op::VARIABLE_WRITE) {
        for (const std::string& n : in_names)
          if (!is_variable(n)) node.inputs.push_back(value(n, index, "input"));
        node.attrs = make_attrs(*op, {{"name", var_name}});
      } else {
        node.attrs = make_attrs(*op, {{"name", var_name}});
        for (const std::string& n : out_names)
          if (!is_variable(n)) node.outputs.push_back(new_value(n, index));
      }
      g.add_node(std::move(node));
      continue;
    }

    for (const std::string& n : in_names) node.inputs.push_back(value(n, index, "input"));
    node.attrs = make_attrs(*op, attributes(o, *op, node.inputs, index));
    for (const std::string& n : out_names) node.outputs.push_back(new_value(n, index));
    g.add_node(std::move(node));
  }
  if (block->outputs())
    for (const auto* s : *block->outputs()) g.add_output(value(s->str(), -1, "block output"));
}

}  // namespace

bool has_identifier(std::span<const uint8_t> bytes) {
  return bytes.size() >= 8 && flatbuffers::BufferHasIdentifier(bytes.data(), fb::TosaGraphIdentifier());
}

Module from_bytes(const Buffer& file, const std::string& source, const ReadOptions& options) {
  const std::span<const uint8_t> bytes(file.data(), file.size());
  if (!has_identifier(bytes))
    fail(ErrorCode::kParse, source, "not a TOSA file: the FlatBuffer file identifier 'TOSA' is missing (bytes 4 to 7)");
  flatbuffers::Verifier verifier(file.data(), file.size(), /*max_depth=*/64, /*max_tables=*/10000000);
  if (!fb::VerifyTosaGraphBuffer(verifier))
    fail(ErrorCode::kParse, source,
         "the TOSA FlatBuffer is malformed (a table, vector or string lies outside the file or is cut short)");
  const fb::TosaGraph* graph = fb::GetTosaGraph(file.data());
  const fb::Version* v = graph->version();
  if (v->_major() != 1 || v->_minor() != 0)
    fail(ErrorCode::kUnsupported, source,
         "TOSA version " + std::to_string(v->_major()) + "." + std::to_string(v->_minor()) + "." +
             std::to_string(v->_patch()) + " is not supported: Weft reads and writes TOSA 1.0 (draft and final)",
         {.operand = "version"});
  if (!graph->regions() || graph->regions()->size() == 0) fail(ErrorCode::kVerify, source, "the file has no region");

  // Graph names: every block by its name; a region by its first block's.
  std::map<std::string, std::string> names;
  std::vector<std::pair<std::string, const fb::TosaBasicBlock*>> blocks;
  for (const fb::TosaRegion* r : *graph->regions()) {
    if (!r->blocks() || r->blocks()->size() == 0)
      fail(ErrorCode::kVerify, source, "region '" + str(r->name()) + "' has no basic block");
    for (const fb::TosaBasicBlock* b : *r->blocks()) {
      std::string name = str(b->name());
      if (name.empty()) name = str(r->name());
      if (name.empty()) name = "block_" + std::to_string(blocks.size());
      for (const auto& [n, other] : blocks)
        if (n == name) fail(ErrorCode::kVerify, source, "two basic blocks are named '" + name + "'");
      names[name] = name;
      blocks.push_back({name, b});
    }
    const std::string region = str(r->name());
    const std::string first = blocks[blocks.size() - r->blocks()->size()].first;
    if (!region.empty() && !names.count(region)) names[region] = first;
  }
  std::string entry = blocks[0].first;
  for (const auto& [n, b] : blocks)
    if (n == "main") entry = n;

  Module module;
  for (size_t i = 0; i < blocks.size(); ++i) {
    BlockReader r{file, source, options, names, blocks[i].second, Graph(blocks[i].first), {}, {}};
    r.entry = blocks[i].first == entry;
    r.read();
    module.add_graph(std::move(r.g));
  }
  module.set_entry(entry);
  try {
    verify_or_throw(module);
  } catch (const Error& e) {
    throw e.with_context({.file = source});
  }
  return module;
}

Module read(const std::string& path, const ReadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(ErrorCode::kIo, "cannot open the file", {.file = path});
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kIo, "not a regular file", {.file = path});
  if (st.st_size < 8) throw Error(ErrorCode::kParse, "too short for a TOSA file (" + std::to_string(st.st_size) + " bytes)", {.file = path});
  Buffer bytes = Buffer::map_file(path, 0, static_cast<size_t>(st.st_size));
  return from_bytes(bytes, path, options);
}

// ---- Writing --------------------------------------------------------------------------------------

namespace {

[[noreturn]] void unsupported(const std::string& message) { throw Error(ErrorCode::kUnsupported, message); }

int32_t narrow(int64_t v, const std::string& what) {
  if (v < INT32_MIN || v > INT32_MAX) unsupported(what + " = " + std::to_string(v) + " does not fit the file's int32");
  return static_cast<int32_t>(v);
}

struct Writer {
  const WriteOptions& options;
  flatbuffers::FlatBufferBuilder fbb;
  bool external = false;           // constant data after the FlatBuffer
  uint64_t external_base = 0;      // file offset of that data (second pass)
  std::vector<std::vector<uint8_t>> outside;  // in order of appearance
  uint64_t outside_bytes = 0;

  explicit Writer(const WriteOptions& o) : options(o), fbb(1 << 16) { fbb.ForceDefaults(true); }

  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> aligned_bytes(const std::vector<uint8_t>& b) {
    fbb.ForceVectorAlignment(b.size(), sizeof(uint8_t), 8);
    return fbb.CreateVector(b);
  }

  flatbuffers::Offset<fb::TosaTensor> tensor(const std::string& name, const TensorType& type, const Tensor* data,
                                              bool variable = false, const std::string& variable_name = "") {
    std::vector<int32_t> shape;
    for (int64_t d : type.shape) shape.push_back(narrow(d, "a dimension of '" + name + "'"));
    const auto n = fbb.CreateString(name);
    const auto s = fbb.CreateVector(shape);
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> bytes = 0;
    uint64_t offset = 0, size = 0;
    if (data) {
      std::vector<uint8_t> enc = encode(*data);
      if (external) {
        offset = external_base + outside_bytes;
        size = enc.size();
        outside_bytes += (enc.size() + 7) / 8 * 8;
        outside.push_back(std::move(enc));
      } else {
        while (enc.size() % 8) enc.push_back(0);
        bytes = aligned_bytes(enc);
      }
    }
    const auto vn = variable ? fbb.CreateString(variable_name) : 0;
    fb::TosaTensorBuilder t(fbb);
    t.add_name(n);
    t.add_shape(s);
    t.add_type(file_type(type.dtype));
    if (data && !external) t.add_data(bytes);
    t.add_variable(variable);
    t.add_is_unranked(false);
    if (variable) t.add_variable_name(vn);
    t.add_offset(offset);
    t.add_size(size);
    return t.Finish();
  }

  flatbuffers::Offset<void> attributes(const Graph& g, const Node& node) {
    const OpDef& def = op_def(node.op);
    const flatbuffers::TypeTable* union_table = fb::AttributeTypeTable();
    const size_t kind = static_cast<size_t>(node.op) + 1;
    const flatbuffers::TypeTable* tt = union_table->type_refs[union_table->type_codes[kind].sequence_ref]();
    const std::string where = std::string(def.name) + " '" + g.node_label(static_cast<int>(&node - g.nodes().data())) + "'";
    // Vectors and strings first, then the table.
    std::vector<std::pair<size_t, flatbuffers::uoffset_t>> offsets;  // field -> offset
    std::vector<std::pair<size_t, const AttrValue*>> scalars;
    for (size_t i = 0; i < def.attrs.size(); ++i) {
      const AttrDef& a = def.attrs[i];
      size_t j = 0;
      while (j < tt->num_elems && std::string_view(tt->names[j]) != a.name) ++j;
      if (j == tt->num_elems) continue;
      const AttrValue& v = node.attrs[i];
      switch (a.kind) {
        case AttrKind::kIntList: {
          std::vector<int32_t> list;
          for (int64_t x : std::get<std::vector<int64_t>>(v)) list.push_back(narrow(x, where + " " + a.name));
          offsets.push_back({j, fbb.CreateVector(list).o});
          break;
        }
        case AttrKind::kScalar: {
          std::vector<uint8_t> enc = encode(std::get<Tensor>(v));
          while (enc.size() % 8) enc.push_back(0);
          offsets.push_back({j, aligned_bytes(enc).o});
          break;
        }
        case AttrKind::kString:
        case AttrKind::kGraph: {
          const std::string& s = std::get<std::string>(v);
          if (tt->type_codes[j].base_type == flatbuffers::ET_STRING) {
            offsets.push_back({j, fbb.CreateString(s).o});
          } else {
            std::vector<uint8_t> b(s.begin(), s.end());
            offsets.push_back({j, fbb.CreateVector(b).o});
          }
          break;
        }
        default:
          scalars.push_back({j, &v});
          break;
      }
    }
    const flatbuffers::uoffset_t start = fbb.StartTable();
    for (const auto& [j, o] : offsets)
      fbb.AddOffset(flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(j)),
                    flatbuffers::Offset<void>(o));
    for (const auto& [j, v] : scalars) {
      const auto off = flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(j));
      const AttrDef& a = def.attrs[static_cast<size_t>(def.attr_index(tt->names[j]))];
      if (a.kind == AttrKind::kBool) {
        fbb.AddElement<uint8_t>(off, std::get<bool>(*v) ? 1 : 0, 0);
      } else if (a.kind == AttrKind::kInt) {
        fbb.AddElement<int32_t>(off, narrow(std::get<int64_t>(*v), where + " " + a.name), 0);
      } else if (a.kind == AttrKind::kAccType) {
        fbb.AddElement<uint32_t>(off, file_type(acc_type_dtype(static_cast<AccType>(std::get<int64_t>(*v)))), 0);
      } else {  // enumerations: the specification's values are the file's
        fbb.AddElement<uint32_t>(off, static_cast<uint32_t>(std::get<int64_t>(*v)), 0);
      }
    }
    return flatbuffers::Offset<void>(fbb.EndTable(start));
  }

  // The attribute table of an operator whose attributes live elsewhere (or that has none).
  flatbuffers::Offset<void> empty_attribute() { return flatbuffers::Offset<void>(fbb.EndTable(fbb.StartTable())); }

  flatbuffers::Offset<fb::TosaBasicBlock> block(const Graph& g) {
    std::vector<flatbuffers::Offset<fb::TosaTensor>> tensors;
    std::vector<flatbuffers::Offset<fb::TosaOperator>> ops;
    std::set<std::string> names;
    for (const Value& v : g.values()) names.insert(v.name);
    std::vector<const Tensor*> data(g.values().size(), nullptr);
    std::vector<Tensor> shape_data;
    shape_data.reserve(g.nodes().size());
    for (const Node& n : g.nodes()) {
      if (n.op == Op::CONST) data[static_cast<size_t>(n.outputs[0])] = &n.attr_tensor("values");
      if (n.op == Op::CONST_SHAPE) {
        const std::vector<int64_t>& vals = n.attr_ints("values");
        const TensorType t{DType::kShape, {static_cast<int64_t>(vals.size())}};
        Buffer b = Buffer::allocate(t.byte_size());
        if (!vals.empty()) std::memcpy(b.mutable_data(), vals.data(), t.byte_size());
        shape_data.emplace_back(t, b);
        data[static_cast<size_t>(n.outputs[0])] = &shape_data.back();
      }
    }
    for (size_t v = 0; v < g.values().size(); ++v)
      tensors.push_back(tensor(g.values()[v].name, g.values()[v].type, data[v]));
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      std::vector<std::string> in, out;
      for (ValueId v : n.inputs) in.push_back(g.value(v).name);
      for (ValueId v : n.outputs) out.push_back(g.value(v).name);
      flatbuffers::Offset<void> attr;
      if (n.op == Op::VARIABLE || n.op == Op::VARIABLE_WRITE || n.op == Op::VARIABLE_READ) {
        const std::string& var = n.attr_str("name");
        if (n.op == Op::VARIABLE) {
          if (names.count(var))
            unsupported("variable '" + var + "' has the name of a tensor of graph '" + g.name() + "'");
          const Tensor& init = n.attr_tensor("initial_value");
          tensors.push_back(tensor(var, init.type(), &init, true, var));
          out = {var};
        } else if (n.op == Op::VARIABLE_WRITE) {
          out = {var};
        } else {
          in = {var};
        }
      }
      // VARIABLE's, CONST's and CONST_SHAPE's attributes live in their tensors.
      const bool in_tensors = n.op == Op::VARIABLE || n.op == Op::VARIABLE_WRITE || n.op == Op::VARIABLE_READ ||
                              n.op == Op::CONST || n.op == Op::CONST_SHAPE;
      attr = in_tensors || op_def(n.op).attrs.empty() ? empty_attribute() : attributes(g, n);
      const auto in_v = fbb.CreateVectorOfStrings(in);
      const auto out_v = fbb.CreateVectorOfStrings(out);
      flatbuffers::Offset<fb::OpLocation> loc = 0;
      if (!n.name.empty()) loc = fb::CreateOpLocation(fbb, fbb.CreateString(n.name));
      fb::TosaOperatorBuilder o(fbb);
      o.add_op(static_cast<fb::Op>(static_cast<uint32_t>(n.op) + 1));
      o.add_attribute_type(static_cast<fb::Attribute>(static_cast<uint8_t>(static_cast<uint32_t>(n.op) + 1)));
      o.add_attribute(attr);
      o.add_inputs(in_v);
      o.add_outputs(out_v);
      if (!n.name.empty()) o.add_location(loc);
      ops.push_back(o.Finish());
    }
    std::vector<std::string> inputs, outputs;
    for (ValueId v : g.inputs()) inputs.push_back(g.value(v).name);
    for (ValueId v : g.outputs()) outputs.push_back(g.value(v).name);
    const auto name = fbb.CreateString(g.name());
    const auto ops_v = fbb.CreateVector(ops);
    const auto tensors_v = fbb.CreateVector(tensors);
    const auto inputs_v = fbb.CreateVectorOfStrings(inputs);
    const auto outputs_v = fbb.CreateVectorOfStrings(outputs);
    return fb::CreateTosaBasicBlock(fbb, name, ops_v, tensors_v, inputs_v, outputs_v);
  }

  void build(const Module& m) {
    std::vector<flatbuffers::Offset<fb::TosaRegion>> regions;
    std::vector<const Graph*> order;
    order.push_back(&m.main());
    for (const Graph& g : m.graphs())
      if (&g != &m.main()) order.push_back(&g);
    for (const Graph* g : order) {
      std::vector<flatbuffers::Offset<fb::TosaBasicBlock>> blocks = {block(*g)};
      regions.push_back(fb::CreateTosaRegion(fbb, fbb.CreateString(g->name()), fbb.CreateVector(blocks)));
    }
    const auto version = fb::CreateVersion(fbb, 1, 0, 0, options.draft);
    fb::FinishTosaGraphBuffer(fbb, fb::CreateTosaGraph(fbb, version, fbb.CreateVector(regions)));
  }
};

}  // namespace

std::vector<uint8_t> to_bytes(const Module& module, const WriteOptions& options) {
  size_t constant_bytes = 0;
  for (const Graph& g : module.graphs()) constant_bytes += g.constant_bytes();
  Writer w(options);
  w.external = constant_bytes > options.inline_data_limit;
  w.build(module);
  if (!w.external) return std::vector<uint8_t>(w.fbb.GetBufferPointer(), w.fbb.GetBufferPointer() + w.fbb.GetSize());
  // Second pass with the data's real offsets: every field is written (ForceDefaults), so the
  // FlatBuffer keeps its size.
  const size_t first_size = w.fbb.GetSize();
  Writer w2(options);
  w2.external = true;
  w2.external_base = (first_size + 7) / 8 * 8;
  w2.build(module);
  if (w2.fbb.GetSize() != first_size) throw Error(ErrorCode::kInternal, "the .tosa FlatBuffer changed size between passes");
  std::vector<uint8_t> out(w2.fbb.GetBufferPointer(), w2.fbb.GetBufferPointer() + w2.fbb.GetSize());
  out.resize(w2.external_base, 0);
  for (const std::vector<uint8_t>& d : w2.outside) {
    out.insert(out.end(), d.begin(), d.end());
    out.resize((out.size() + 7) / 8 * 8, 0);
  }
  return out;
}

void save(const Module& module, const std::string& path, const WriteOptions& options) {
  const std::vector<uint8_t> bytes = to_bytes(module, options);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(ErrorCode::kIo, "cannot write the file", {.file = path});
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error(ErrorCode::kIo, "writing failed", {.file = path});
}

}  // namespace weft::tosa_file
