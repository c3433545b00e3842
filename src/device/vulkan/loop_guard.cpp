// The loop guard of lavapipe dispatches (see loop_guard.h): a rewrite of the compute shader's
// SPIR-V that notices loops ended before their own exit.
#include "device/vulkan/loop_guard.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "spirv/binary.h"

namespace weft::vk::detail {

namespace {

// Opcodes, enumerants and ids the rewrite reads or writes (SPIR-V 1.6 unified spec).
enum Op : uint32_t {
  kOpSourceContinued = 2, kOpSource = 3, kOpSourceExtension = 4, kOpName = 5, kOpMemberName = 6, kOpString = 7,
  kOpLine = 8, kOpExtension = 10, kOpExtInstImport = 11, kOpMemoryModel = 14, kOpEntryPoint = 15,
  kOpExecutionMode = 16, kOpCapability = 17, kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeArray = 28,
  kOpTypeStruct = 30, kOpTypePointer = 32, kOpConstant = 43, kOpFunction = 54, kOpFunctionEnd = 56,
  kOpVariable = 59, kOpLoad = 61, kOpStore = 62, kOpAccessChain = 65, kOpDecorate = 71, kOpMemberDecorate = 72,
  kOpDecorationGroup = 73, kOpGroupDecorate = 74, kOpGroupMemberDecorate = 75,
  kOpLogicalNot = 168, kOpSelect = 169, kOpINotEqual = 171, kOpBitwiseOr = 197, 
  kOpAtomicStore = 228, kOpPhi = 245,
  kOpLoopMerge = 246, kOpSelectionMerge = 247, kOpLabel = 248, kOpBranch = 249, kOpBranchConditional = 250,
  kOpReturn = 253, kOpNoLine = 317, kOpModuleProcessed = 330, kOpExecutionModeId = 331, kOpDecorateId = 332,
  kOpDecorateString = 5632, kOpMemberDecorateString = 5633,
};
constexpr uint32_t kCapabilityShader = 1;
constexpr uint32_t kGLCompute = 5;
constexpr uint32_t kStorageInput = 1, kStorageWorkgroup = 4, kStoragePrivate = 6, kStorageStorageBuffer = 12;
constexpr uint32_t kExecutionModeLocalSize = 17, kBuiltInWorkgroupSize = 25, kBuiltInLocalInvocationIndex = 29,
                   kMemoryAccessVolatile = 1;
constexpr uint32_t kMaxIdBound = 0x3fffff - 4096;  // leaves room for the guard's ids under the universal limit
constexpr uint32_t kDecorationBlock = 2, kDecorationBuiltIn = 11, kDecorationBinding = 33,
                   kDecorationDescriptorSet = 34, kDecorationOffset = 35;
constexpr uint32_t kScopeDevice = 1;
constexpr uint32_t kVersion13 = 0x00010300, kVersion14 = 0x00010400;

// Instructions of the sections before the types: capabilities to annotations.
bool before_declarations(uint32_t op) {
  switch (op) {
    case kOpCapability: case kOpExtension: case kOpExtInstImport: case kOpMemoryModel: case kOpEntryPoint:
    case kOpExecutionMode: case kOpExecutionModeId: case kOpString: case kOpSourceExtension: case kOpSource:
    case kOpSourceContinued: case kOpName: case kOpMemberName: case kOpModuleProcessed: case kOpDecorate:
    case kOpMemberDecorate: case kOpDecorationGroup: case kOpGroupDecorate: case kOpGroupMemberDecorate:
    case kOpDecorateId: case kOpDecorateString: case kOpMemberDecorateString:
      return true;
    default:
      return false;
  }
}

void emit(std::vector<uint32_t>& out, uint32_t op, std::initializer_list<uint32_t> operands) {
  out.push_back(static_cast<uint32_t>(operands.size() + 1) << 16 | op);
  out.insert(out.end(), operands.begin(), operands.end());
}

}  // namespace

bool has_loops(std::span<const uint32_t> spirv) {
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t count = spirv[i] >> 16;
    if (count == 0 || i + count > spirv.size()) return false;
    if ((spirv[i] & 0xffff) == kOpLoopMerge) return true;
    i += count;
  }
  return false;
}

std::optional<GuardedShader> add_loop_guard(std::span<const uint32_t> spirv, std::string_view entry_point,
                                            uint32_t max_invocations, uint32_t min_binding) {
  spirv::Stream s;
  try {
    s = spirv::split_instructions(spirv);
  } catch (const Error&) {
    return std::nullopt;
  }
  constexpr size_t kNone = static_cast<size_t>(-1);
  const auto& insts = s.instructions;

  // What the module declares.
  size_t entry_index = kNone, first_declaration = kNone, first_function = kNone;
  uint32_t entry_function = 0, uint_type = 0, bool_type = 0, current_label = 0;
  bool shader = false, workgroup_size_builtin = false;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> pointers;  // (storage class, pointee) -> pointer type
  std::map<uint32_t, uint32_t> set_of, binding_of;
  // Loops by header label: their merge and continue targets.
  struct Loop {
    uint32_t header, merge, continue_target;
  };
  std::vector<Loop> loops;
  std::map<uint32_t, uint64_t> local_size;  // function -> workgroup invocations (OpExecutionMode LocalSize)
  for (size_t i = 0; i < insts.size(); ++i) {
    const spirv::Instruction& in = insts[i];
    const uint32_t op = in.opcode();
    const size_t n = in.size();
    if (first_declaration == kNone && !before_declarations(op)) first_declaration = i;
    switch (op) {
      case kOpCapability:
        if (n < 2) return std::nullopt;
        shader |= in.word(1) == kCapabilityShader;
        break;
      case kOpEntryPoint: {
        if (n < 4) return std::nullopt;
        size_t next = 0;
        std::string name;
        try {
          name = spirv::read_string(in, 3, &next);
        } catch (const Error&) {
          return std::nullopt;
        }
        if (in.word(1) == kGLCompute && name == entry_point && entry_index == kNone) {
          entry_index = i;
          entry_function = in.word(2);
        }
        break;
      }
      case kOpExecutionMode:
        if (n >= 6 && in.word(2) == kExecutionModeLocalSize)
          local_size[in.word(1)] = uint64_t{in.word(3)} * in.word(4) * in.word(5);
        break;
      case kOpTypeInt:
        if (n >= 4 && in.word(2) == 32 && in.word(3) == 0) uint_type = in.word(1);
        break;
      case kOpTypeBool:
        if (n >= 2) bool_type = in.word(1);
        break;
      case kOpTypePointer:
        if (n >= 4) pointers[{in.word(2), in.word(3)}] = in.word(1);
        break;
      case kOpDecorate:
        // A WorkgroupSize constant (e.g. from specialization) overrides LocalSize.
        if (n >= 4 && in.word(2) == kDecorationBuiltIn && in.word(3) == kBuiltInWorkgroupSize)
          workgroup_size_builtin = true;
        if (n >= 4 && in.word(2) == kDecorationDescriptorSet) set_of[in.word(1)] = in.word(3);
        if (n >= 4 && in.word(2) == kDecorationBinding) binding_of[in.word(1)] = in.word(3);
        break;
      case kOpFunction:
        if (n < 3) return std::nullopt;
        if (first_function == kNone) first_function = i;
        break;
      case kOpLabel:
        if (n < 2) return std::nullopt;
        current_label = in.word(1);
        break;
      case kOpLoopMerge:
        if (n < 3) return std::nullopt;
        loops.push_back({current_label, in.word(1), in.word(2)});
        break;
      default:
        break;
    }
  }
  if (entry_index == kNone || !shader || first_function == kNone || first_declaration == kNone ||
      first_declaration > first_function || s.header.bound > kMaxIdBound)
    return std::nullopt;

  GuardedShader out;
  uint32_t highest = 0;
  bool any = false;
  for (const auto& [id, b] : binding_of)
    if ((set_of.count(id) ? set_of[id] : 0) == 0) {
      highest = std::max(highest, b);
      any = true;
    }
  if (any && highest == UINT32_MAX) return std::nullopt;
  out.binding = std::max(any ? highest + 1 : 0, min_binding);

  // Ids: reused types where the module has them (non-aggregate types must be unique), new ones else.
  uint32_t next_id = s.header.bound;
  auto fresh = [&]() { return next_id++; };
  std::vector<uint32_t> declarations;
  if (!uint_type) emit(declarations, kOpTypeInt, {uint_type = fresh(), 32, 0});
  if (!bool_type) emit(declarations, kOpTypeBool, {bool_type = fresh()});
  auto constant = [&](uint32_t value) {
    const uint32_t id = fresh();
    emit(declarations, kOpConstant, {uint_type, id, value});
    return id;
  };
  // One word of workgroup memory per invocation, accessed volatile (the compiler must not reason
  // about it: the loop exit it detects is not in the program's semantics): 1 when the invocation
  // went on to a loop's next pass and has not passed a loop header or merge since, else all ones.
  // `cut` (private): a merge block found it set.
  auto it_size = local_size.find(entry_function);
  const uint64_t invocations = it_size != local_size.end() && it_size->second > 0 && !workgroup_size_builtin
                                   ? it_size->second
                                   : std::max<uint32_t>(max_invocations, 1);
  if (invocations > 65536) return std::nullopt;
  const uint32_t c0 = constant(0), c1 = constant(1), c_device = constant(kScopeDevice),
                 c_idle = constant(0xffffffffu), c_count = constant(static_cast<uint32_t>(invocations));
  const uint32_t array_type = fresh(), block_type = fresh();
  emit(declarations, kOpTypeArray, {array_type, uint_type, c_count});
  emit(declarations, kOpTypeStruct, {block_type, uint_type});
  auto pointer = [&](uint32_t storage, uint32_t pointee) {
    auto it = pointers.find({storage, pointee});
    if (it != pointers.end()) return it->second;
    const uint32_t id = fresh();
    emit(declarations, kOpTypePointer, {id, storage, pointee});
    pointers[{storage, pointee}] = id;
    return id;
  };
  const uint32_t p_input = pointer(kStorageInput, uint_type), p_words = pointer(kStorageWorkgroup, array_type),
                 p_word = pointer(kStorageWorkgroup, uint_type), p_private = pointer(kStoragePrivate, uint_type),
                 p_flag_block = pointer(kStorageStorageBuffer, block_type),
                 p_flag = pointer(kStorageStorageBuffer, uint_type);
  const uint32_t local_index = fresh(), words = fresh(), cut = fresh(), flag = fresh();
  emit(declarations, kOpVariable, {p_input, local_index, kStorageInput});
  emit(declarations, kOpVariable, {p_words, words, kStorageWorkgroup});
  emit(declarations, kOpVariable, {p_private, cut, kStoragePrivate, c0});
  emit(declarations, kOpVariable, {p_flag_block, flag, kStorageStorageBuffer});

  std::map<uint32_t, const Loop*> by_header, by_merge;
  std::map<uint32_t, std::vector<const Loop*>> by_next_pass;  // continue target or header -> loops
  for (const Loop& l : loops) {
    by_header[l.header] = &l;
    by_merge[l.merge] = &l;
    by_next_pass[l.continue_target].push_back(&l);
    if (l.header != l.continue_target) by_next_pass[l.header].push_back(&l);
  }

  std::vector<uint32_t>& w = out.spirv;
  w.reserve(spirv.size() + declarations.size() + 64 + 48 * loops.size());
  w.insert(w.end(), {s.header.magic, std::max(s.header.version, kVersion13), s.header.generator, 0,
                     s.header.schema});
  auto copy = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) w.insert(w.end(), insts[k].words.begin(), insts[k].words.end());
  };
  // This invocation's word, volatile loads and stores.
  auto word_pointer = [&]() {
    const uint32_t index = fresh(), ptr = fresh();
    emit(w, kOpLoad, {uint_type, index, local_index});
    emit(w, kOpAccessChain, {p_word, ptr, words, index});
    return ptr;
  };
  auto load = [&](uint32_t ptr) {
    const uint32_t v = fresh();
    emit(w, kOpLoad, {uint_type, v, ptr, kMemoryAccessVolatile});
    return v;
  };
  auto binary = [&](uint32_t op, uint32_t type, uint32_t a, uint32_t b) {
    const uint32_t v = fresh();
    emit(w, op, {type, v, a, b});
    return v;
  };
  auto store = [&](uint32_t ptr, uint32_t v) { emit(w, kOpStore, {ptr, v, kMemoryAccessVolatile}); };

  // One block, insts[b] (its OpLabel) to insts[e - 1] (its terminator).
  auto block = [&](size_t b, size_t e, bool function_start, bool in_entry) {
    const uint32_t label = insts[b].word(1);
    size_t k = b + 1;
    if (function_start) {  // the counter after the function's variables; the words start idle
      while (k < e && (insts[k].opcode() == kOpVariable || insts[k].opcode() == kOpLine ||
                       insts[k].opcode() == kOpNoLine))
        ++k;
      copy(b, k);
      if (in_entry) store(word_pointer(), c_idle);
    } else {
      while (k < e && (insts[k].opcode() == kOpPhi || insts[k].opcode() == kOpLine || insts[k].opcode() == kOpNoLine))
        ++k;
      copy(b, k);
    }
    if (by_merge.count(label)) {  // leaving a loop: cut if it went on since the last header
      const uint32_t ptr = word_pointer();
      const uint32_t went_on = binary(kOpINotEqual, bool_type, load(ptr), c_idle);
      const uint32_t now = fresh(), before = fresh();
      emit(w, kOpSelect, {uint_type, now, went_on, c1, c0});
      emit(w, kOpLoad, {uint_type, before, cut});
      emit(w, kOpStore, {cut, binary(kOpBitwiseOr, uint_type, before, now)});
      store(ptr, c_idle);
    }
    if (by_header.count(label)) store(word_pointer(), c_idle);  // a new pass
    const size_t term = e - 1;
    size_t tail = term;
    if (tail > k && (insts[term - 1].opcode() == kOpLoopMerge || insts[term - 1].opcode() == kOpSelectionMerge))
      tail = term - 1;
    copy(k, tail);
    // Going on to a loop's next pass (to its continue target, or back to its header) records the
    // pass; a branch that may also leave records the condition's choice, so that leaving through
    // it is not taken for a cut. OpSwitch targets are not followed (compilers branch to a continue
    // target from case blocks, not from the switch itself).
    const spirv::Instruction& t = insts[term];
    auto goes_on = [&](uint32_t target) { return by_next_pass.count(target) > 0; };
    uint32_t condition = 0;
    bool record = false;
    if (t.opcode() == kOpBranch && t.size() >= 2) {
      record = goes_on(t.word(1));
    } else if (t.opcode() == kOpBranchConditional && t.size() >= 4) {
      const bool on_true = goes_on(t.word(2)), on_false = goes_on(t.word(3));
      record = on_true || on_false;
      if (on_true && !on_false) condition = t.word(1);
      if (!on_true && on_false) emit(w, kOpLogicalNot, {bool_type, condition = fresh(), t.word(1)});
    }
    if (record) {
      uint32_t value = c1;
      if (condition) emit(w, kOpSelect, {uint_type, value = fresh(), condition, c1, c_idle});
      store(word_pointer(), value);
    }
    if (t.opcode() == kOpReturn && in_entry) {  // if (cut) flag = 1; return
      const uint32_t cut_now = fresh();
      emit(w, kOpLoad, {uint_type, cut_now, cut});
      const uint32_t reached = binary(kOpINotEqual, bool_type, cut_now, c0);
      const uint32_t then = fresh(), merge = fresh(), flag_ptr = fresh();
      emit(w, kOpSelectionMerge, {merge, 0});
      emit(w, kOpBranchConditional, {reached, then, merge});
      emit(w, kOpLabel, {then});
      emit(w, kOpAccessChain, {p_flag, flag_ptr, flag, c0});
      emit(w, kOpAtomicStore, {flag_ptr, c_device, c0, c1});
      emit(w, kOpBranch, {merge});
      emit(w, kOpLabel, {merge});
    }
    copy(tail, e);
  };

  bool in_entry = false, first_block = false;
  for (size_t i = 0; i < insts.size();) {
    const spirv::Instruction& in = insts[i];
    const uint32_t op = in.opcode();
    if (i == first_declaration) {
      emit(w, kOpDecorate, {local_index, kDecorationBuiltIn, kBuiltInLocalInvocationIndex});
      emit(w, kOpDecorate, {block_type, kDecorationBlock});
      emit(w, kOpMemberDecorate, {block_type, 0, kDecorationOffset, 0});
      emit(w, kOpDecorate, {flag, kDecorationDescriptorSet, out.set});
      emit(w, kOpDecorate, {flag, kDecorationBinding, out.binding});
    }
    if (i == first_function) w.insert(w.end(), declarations.begin(), declarations.end());
    if (i == entry_index) {
      // The entry point's interface lists the new input (from SPIR-V 1.4, every global it uses).
      std::vector<uint32_t> ids(in.words.begin() + 1, in.words.end());
      ids.push_back(local_index);
      if (s.header.version >= kVersion14) ids.insert(ids.end(), {words, cut, flag});
      w.push_back(static_cast<uint32_t>(ids.size() + 1) << 16 | kOpEntryPoint);
      w.insert(w.end(), ids.begin(), ids.end());
      ++i;
      continue;
    }
    if (op == kOpFunction) {
      if (in.size() < 3) return std::nullopt;
      in_entry = in.word(2) == entry_function;
      first_block = true;
    } else if (op == kOpFunctionEnd) {
      in_entry = false;
    } else if (op == kOpLabel) {
      size_t e = i + 1;
      while (e < insts.size() && insts[e].opcode() != kOpLabel && insts[e].opcode() != kOpFunctionEnd) ++e;
      if (e == i + 1) return std::nullopt;  // a block without a terminator
      block(i, e, first_block, in_entry);
      first_block = false;
      i = e;
      continue;
    }
    copy(i, i + 1);
    ++i;
  }
  w[3] = next_id;
  return out;
}

}  // namespace weft::vk::detail
