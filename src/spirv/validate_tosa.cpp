// Validator: OpExtInst of TOSA.001000.1 inside graphs. Operand counts come from the extended
// instruction grammar (tosa_operands), operand kinds, ranks and element types from the operator
// table (OpDef: inputs, attributes, TypeSupport rows and their profiles).
#include <algorithm>

#include "spirv/validate_internal.h"

namespace weft::spirv::validation {
namespace {

// Resolves the operator table's symbolic rank bounds; -1: no bound.
int rank_bound(int8_t b) {
  switch (b) {
    case kRankMax: return kMaxRank;
    case kRankMaxMinus1: return kMaxRank - 1;
    case kRankAny: return -1;
    default: return b;
  }
}

bool row_enabled(const TypeSupport& row, ProfileSet profiles) {
  if (row.any_of[0] == 0) return true;
  for (ProfileSet alt : row.any_of) {
    if (alt == 0) break;
    if ((alt & ~profiles) == 0) return true;
  }
  return false;
}

std::string requirement_str(const TypeSupport& row) {
  std::string s;
  for (ProfileSet alt : row.any_of) {
    if (alt == 0) break;
    s += (s.empty() ? "" : " or ") + profile_set_str(alt);
  }
  return s;
}

std::string row_str(const OpDef& d, const TypeSupport& row) {
  std::string s = std::string(row.mode) + " [";
  for (size_t k = 0; k < d.type_vars.size(); ++k) s += (k ? "," : "") + std::string(dtype_name(row.types[k]));
  return s + "]";
}

std::string enum_choices(AttrKind kind) {
  std::string s;
  for (int64_t e = 1; enum_value_name(kind, e) != nullptr; ++e) {
    s += (s.empty() ? "" : ", ") + std::to_string(e) + " " + enum_value_name(kind, e);
  }
  return s;
}

bool is_graph_value(uint16_t op) {
  return op == kOpGraphInputARM || op == kOpExtInst || op == kOpCompositeExtract || op == kOpGraphConstantARM ||
         op == kOpConstantComposite || op == kOpConstantNull || op == kOpConstantCompositeReplicateEXT;
}

// A tensor constant whose values are fixed: written out, all zeros (Arm's model converter writes
// zero pads and zero points so) or one value replicated.
bool is_tensor_constant(uint16_t op) {
  return op == kOpConstantComposite || op == kOpConstantNull || op == kOpConstantCompositeReplicateEXT;
}

}  // namespace

void Checker::check_tosa(size_t i) {
  const Inst& in = insts_[i];
  uint32_t number = in.word(4);
  std::optional<Op> op = tosa_op_from_opcode(number);
  if (!op || op_def(*op).spirv_opcode < 0 || tosa_operands(*op).empty()) {
    r_.add("tosa.instruction", &in, "instruction number " + std::to_string(number) + " is not a TOSA.001000.1 instruction");
    return;
  }
  const OpDef& d = op_def(*op);
  const std::string opname = d.name;
  std::span<const TosaOperand> operands = tosa_operands(*op);
  std::span<const uint32_t> args = in.words.subspan(std::min<size_t>(5, in.size()));

  // ---- count ----
  size_t fixed = 0;
  bool variadic = false;
  std::string names;
  for (const TosaOperand& t : operands) {
    if (t.variadic) {
      variadic = true;
    } else {
      ++fixed;
    }
    names += (names.empty() ? "" : ", ") + std::string(t.name) + (t.variadic ? "..." : "");
  }
  if (variadic ? args.size() < fixed + 1 : args.size() != fixed) {
    r_.add("tosa.operand-count", &in,
           opname + " takes " + (variadic ? "at least " + std::to_string(fixed + 1) : std::to_string(fixed)) +
               " operands (" + names + "), got " + std::to_string(args.size()));
    return;
  }

  // ---- type-variable bindings from tensor operands and results ----
  std::vector<std::optional<DType>> bound(d.type_vars.size());
  std::vector<std::string> source(d.type_vars.size());
  bool types_known = true;
  auto bind = [&](const char* elem, const TensorInfo& t, const std::string& what, uint32_t id) {
    if (elem == nullptr || *elem == '\0') return;
    if (!t.dtype) {
      r_.add("tosa.types", &in, opname + ": " + what + " " + r_.name(id) + " has element type " +
                                    r_.name(t.elem_type) + ", which has no TOSA type",
             {id});
      types_known = false;
      return;
    }
    int var = d.type_var_index(elem);
    if (var >= 0) {
      auto k = static_cast<size_t>(var);
      if (!bound[k]) {
        bound[k] = t.dtype;
        source[k] = what + " " + r_.name(id);
      } else if (*bound[k] != *t.dtype) {
        r_.add("tosa.types", &in,
               opname + ": " + what + " " + r_.name(id) + " has element type " + dtype_name(*t.dtype) + " but " +
                   elem + " is " + dtype_name(*bound[k]) + " (from " + source[k] + ")",
               {id});
        types_known = false;
      }
      return;
    }
    if (auto fixed_type = parse_dtype(elem); fixed_type && *fixed_type != *t.dtype) {
      r_.add("tosa.types", &in,
             opname + ": " + what + " " + r_.name(id) + " must have element type " + elem + ", got " +
                 dtype_name(*t.dtype),
             {id});
      types_known = false;
    }
  };
  auto check_rank = [&](const ArgDef& a, const TensorInfo& t, const std::string& what, uint32_t id) {
    if (t.rank < 0) return;
    int lo = std::max(0, rank_bound(a.min_rank)), hi = rank_bound(a.max_rank);
    if (t.rank < lo || (hi >= 0 && t.rank > hi)) {
      std::string range = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
      r_.add("tosa.rank", &in,
             opname + ": " + what + " " + r_.name(id) + " has rank " + std::to_string(t.rank) + ", expected " + range +
                 " (" + a.shape + ")",
             {id});
    }
  };

  // Result.
  if (def_before(in.result_type, i) != nullptr) {
    const Inst* rt = def_before(in.result_type, i);
    if (d.outputs.size() == 2) {
      bool ok = rt->opcode() == kOpTypeStruct && rt->size() == 4 && tensor_type(rt->word(2)) != nullptr &&
                tensor_type(rt->word(3)) != nullptr;
      if (!ok) {
        r_.add("tosa.result-type", &in,
               opname + " returns a struct of two tensor types (" + d.outputs[0].name + ", " + d.outputs[1].name +
                   "), got " + describe_type(in.result_type),
               {in.result_type});
        types_known = false;
      } else {
        for (size_t k = 0; k < 2; ++k) {
          const TensorInfo& t = *tensor_type(rt->word(2 + k));
          std::string what = std::string("result '") + d.outputs[k].name + "'";
          check_rank(d.outputs[k], t, what, rt->word(2 + k));
          bind(d.outputs[k].elem, t, what, rt->word(2 + k));
        }
      }
    } else if (const TensorInfo* t = tensor_type(in.result_type)) {
      std::string what = std::string("result '") + d.outputs[0].name + "'";
      check_rank(d.outputs[0], *t, what, in.result_type);
      bind(d.outputs[0].elem, *t, what, in.result_type);
    } else if (is_broken_tensor_type(in.result_type)) {
      types_known = false;  // its type.tensor.* diagnostic says why
    } else {
      r_.add("tosa.result-type", &in, opname + " returns a tensor type, got " + describe_type(in.result_type),
             {in.result_type});
      types_known = false;
    }
  } else {
    types_known = false;
  }

  // Tensor and shape inputs.
  const TensorInfo* input0 = nullptr;
  for (size_t p = 0; p < args.size(); ++p) {
    const TosaOperand& t = operands[std::min(p, operands.size() - 1)];
    if (t.is_attribute) continue;
    uint32_t id = args[p];
    const Inst* v = def_before(id, i);
    if (v == nullptr) {
      types_known = false;
      continue;
    }
    const ArgDef& a = d.inputs[static_cast<size_t>(t.index)];
    std::string what = "operand '" + std::string(t.name) + "'";
    if (t.variadic) what += "[" + std::to_string(p - fixed) + "]";
    if (a.kind == ArgKind::kShape) {
      const TensorInfo* s = is_tensor_constant(v->opcode()) ? tensor_type(v->result_type) : nullptr;
      if (s == nullptr || s->dtype != DType::kInt32 || s->rank != 1) {
        r_.add("tosa.shape-operand", &in,
               opname + ": " + what + " " + r_.name(id) + " must be a rank-1 i32 tensor constant (shape_t " + a.shape +
                   "), got " + (s != nullptr ? "a tensor " + s->str() : std::string("an ") + v->name()),
               {id});
      }
      continue;
    }
    const TensorInfo* ti = is_graph_value(v->opcode()) ? tensor_type(v->result_type) : nullptr;
    if (ti == nullptr && is_graph_value(v->opcode()) && is_broken_tensor_type(v->result_type)) {
      types_known = false;  // its type.tensor.* diagnostic says why
      continue;
    }
    if (ti == nullptr) {
      r_.add("tosa.tensor-operand", &in,
             opname + ": " + what + " " + r_.name(id) + " must be a tensor value, got " +
                 (is_graph_value(v->opcode()) ? "a value of type " + describe_type(v->result_type)
                                              : "an " + std::string(v->name())),
             {id});
      types_known = false;
      continue;
    }
    if (t.index == 0 && input0 == nullptr) input0 = ti;
    check_rank(a, *ti, what, id);
    bind(a.elem, *ti, what, id);
  }

  // Attributes.
  for (size_t p = 0; p < args.size(); ++p) {
    const TosaOperand& t = operands[std::min(p, operands.size() - 1)];
    if (!t.is_attribute) continue;
    uint32_t id = args[p];
    const Inst* c = def_before(id, i);
    if (c == nullptr) continue;
    const AttrDef& a = d.attrs[static_cast<size_t>(t.index)];
    std::string what = opname + ": attribute '" + a.name + "' " + r_.name(id);
    auto bad_kind = [&](const std::string& need) {
      r_.add("tosa.attribute", &in, what + " must be " + need + ", got an " + c->name() +
                                        (c->result_type ? " of type " + describe_type(c->result_type) : ""),
             {id});
    };
    uint32_t width = 0;
    switch (a.kind) {
      case AttrKind::kInt:
        if (!int_constant(id, i, &width) || width != 32) bad_kind("an i32 OpConstant");
        break;
      case AttrKind::kBool:
        if (c->opcode() != kOpConstantTrue && c->opcode() != kOpConstantFalse &&
            !(c->opcode() == kOpConstantNull && scalar_dtype(c->result_type, i) == DType::kBool))
          bad_kind("OpConstantTrue, OpConstantFalse or a bool OpConstantNull");
        break;
      case AttrKind::kAccType:
      case AttrKind::kNanMode:
      case AttrKind::kResizeMode:
      case AttrKind::kRoundingMode: {
        auto v = int_constant(id, i, &width);
        if (!v || width != 32) {
          bad_kind("an i32 OpConstant holding an enumeration value");
        } else if (enum_value_name(a.kind, *v) == nullptr) {
          r_.add("tosa.attribute-value", &in,
                 what + " = " + std::to_string(*v) + " is not a valid value (" + enum_choices(a.kind) + ")", {id});
        } else if (a.kind == AttrKind::kAccType) {
          int var = d.type_var_index("acc_t");
          if (var >= 0 && !bound[static_cast<size_t>(var)]) {
            bound[static_cast<size_t>(var)] = acc_type_dtype(static_cast<AccType>(*v));
            source[static_cast<size_t>(var)] = "attribute 'acc_type'";
          }
        }
        break;
      }
      case AttrKind::kIntList: {
        const TensorInfo* l = is_tensor_constant(c->opcode()) ? tensor_type(c->result_type) : nullptr;
        if (l == nullptr || l->dtype != DType::kInt32 || l->rank != 1 || !l->has_shape) {
          bad_kind("a rank-1 i32 tensor constant");
          break;
        }
        int64_t expected = a.length;
        std::string why;
        if (a.length == kLenRankOfInput0) {
          expected = input0 != nullptr ? input0->rank : -1;
          why = " (the rank of '" + std::string(d.inputs[0].name) + "')";
        }
        if (expected >= 0 && l->dims[0] != expected) {
          r_.add("tosa.attribute-value", &in,
                 what + " has " + std::to_string(l->dims[0]) + " entries, expected " + std::to_string(expected) + why,
                 {id});
        }
        break;
      }
      case AttrKind::kScalar: {
        bool scalar = c->opcode() == kOpConstant || c->opcode() == kOpConstantTrue || c->opcode() == kOpConstantFalse ||
                      (c->opcode() == kOpConstantNull && scalar_dtype(c->result_type, i).has_value());
        if (!scalar) {
          bad_kind("a scalar OpConstant of the element type");
          break;
        }
        int var = d.type_var_index(a.elem);
        auto dt = scalar_dtype(c->result_type, i);
        if (var >= 0 && bound[static_cast<size_t>(var)] && dt != bound[static_cast<size_t>(var)]) {
          r_.add("tosa.attribute", &in,
                 what + " has type " + describe_type(c->result_type) + " but " + a.elem + " is " +
                     dtype_name(*bound[static_cast<size_t>(var)]) + " (from " + source[static_cast<size_t>(var)] + ")",
                 {id});
        }
        break;
      }
      default: bad_kind("an attribute kind TOSA.001000.1 can express"); break;
    }
  }

  // ---- the operator table's type combinations and the module's profiles ----
  if (!types_known || d.types.empty()) return;
  std::vector<const TypeSupport*> found;
  for (const TypeSupport& row : d.types) {
    bool match = true;
    for (size_t k = 0; k < bound.size() && match; ++k) match = !bound[k] || *bound[k] == row.types[k];
    if (match) found.push_back(&row);
  }
  std::string bound_str;
  for (size_t k = 0; k < bound.size(); ++k) {
    if (bound[k]) bound_str += (bound_str.empty() ? "" : ", ") + std::string(d.type_vars[k]) + "=" + dtype_name(*bound[k]);
  }
  if (found.empty()) {
    std::string rows;
    for (const TypeSupport& row : d.types) rows += (rows.empty() ? "" : "; ") + row_str(d, row);
    r_.add("tosa.types", &in, opname + ": no type combination matches (" + bound_str + "); supported: " + rows);
    return;
  }
  if (std::any_of(found.begin(), found.end(), [&](const TypeSupport* r) { return row_enabled(*r, profiles_); })) return;
  std::string needs;
  for (const TypeSupport* row : found) needs += (needs.empty() ? "" : "; ") + std::string(row->mode) + " needs " + requirement_str(*row);
  r_.add("tosa.profile", &in,
         opname + " (" + bound_str + "): " + needs + ", module profiles are " + profile_set_str(profiles_));
}

}  // namespace weft::spirv::validation
