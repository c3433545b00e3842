#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backends/reference/kernels.h"

namespace weft::runtime {
namespace {

// A slice of the arena shared by one value, or by a chain of in-place values, or a workspace.
struct Slot {
  size_t bytes = 0;
  int first = 0;  // step that writes it first
  int last = 0;   // step of the last read (graph outputs: past the last step)
  size_t offset = 0;
};

}  // namespace


std::vector<Step> node_steps(const Graph& g) {
  std::vector<Step> steps;
  steps.reserve(g.nodes().size());
  for (const Node& n : g.nodes()) {
    Step s;
    s.inputs = n.inputs;
    s.outputs = n.outputs;
    s.constant = n.op == Op::CONST;
    s.forwards = !s.constant && ref::forwards_buffer(n.op);
    s.in_place_ok = ref::runs_in_place(n.op);
    steps.push_back(std::move(s));
  }
  return steps;
}

MemoryPlan plan_memory(const Graph& g) { return plan_memory(g, node_steps(g)); }

MemoryPlan plan_memory(const Graph& g, const std::vector<Step>& steps) {
  const size_t nv = g.values().size();
  const int end = static_cast<int>(steps.size());
  MemoryPlan plan;
  plan.values.resize(nv);
  plan.in_place.assign(steps.size(), false);
  plan.workspace.assign(steps.size(), 0);

  // Values no step writes live inside fused kernels (graph inputs are written by the caller).
  std::vector<bool> written(nv, false);
  for (ValueId v : g.inputs()) written[static_cast<size_t>(v)] = true;
  for (const Step& s : steps)
    for (ValueId o : s.outputs) written[static_cast<size_t>(o)] = true;
  for (size_t v = 0; v < nv; ++v)
    if (!written[v]) plan.values[v].place = Place::kInternal;

  // Storage roots: an alias (IDENTITY / RESHAPE output) reads and extends its input's storage.
  std::vector<ValueId> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (ValueId v : g.inputs()) plan.values[static_cast<size_t>(v)].place = Place::kInput;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValuePlan& p = plan.values[static_cast<size_t>(g.outputs()[i])];
    if (p.place != Place::kInput && p.output_index < 0) {
      p.place = Place::kOutput;
      p.output_index = static_cast<int>(i);
    }
  }
  for (const Step& s : steps) {
    if (s.constant) {
      plan.values[static_cast<size_t>(s.outputs[0])].place = Place::kConstant;
    } else if (s.forwards) {
      ValueId out = s.outputs[0];
      plan.values[static_cast<size_t>(out)].place = Place::kAlias;
      root[static_cast<size_t>(out)] = root[static_cast<size_t>(s.inputs[0])];
    }
  }
  for (size_t v = 0; v < nv; ++v)
    if (plan.values[v].place != Place::kInternal) plan.values[v].bytes = g.values()[v].type.byte_size();

  // Last read of each root's storage, through any of its aliases.
  std::vector<int> last_use(nv, -1);
  auto touch = [&](ValueId v, int at) {
    size_t r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    last_use[r] = std::max(last_use[r], at);
  };
  for (int si = 0; si < end; ++si) {
    for (ValueId v : steps[static_cast<size_t>(si)].inputs) touch(v, si);
  }
  for (ValueId v : g.outputs()) touch(v, end);

  // One slot per arena value, except that an in-place output joins its input's slot; one slot
  // per workspace, alive during its step only.
  std::vector<Slot> slots;
  std::vector<int> slot_of(nv, -1);
  std::vector<int> workspace_slot(steps.size(), -1);
  for (int si = 0; si < end; ++si) {
    const Step& s = steps[static_cast<size_t>(si)];
    if (s.workspace_bytes > 0) {
      workspace_slot[static_cast<size_t>(si)] = static_cast<int>(slots.size());
      slots.push_back({s.workspace_bytes, si, si, 0});
      plan.workspace_bytes = std::max(plan.workspace_bytes, s.workspace_bytes);
    }
    for (ValueId o : s.outputs) {
      ValuePlan& p = plan.values[static_cast<size_t>(o)];
      if (p.place != Place::kArena) continue;
      const TensorType& ot = g.value(o).type;
      int joined = -1;
      if (s.outputs.size() == 1 && s.in_place_ok) {
        for (size_t k = 0; k < s.inputs.size(); ++k) {
          if (s.in_place_input >= 0 && static_cast<int>(k) != s.in_place_input) continue;
          const ValueId in = s.inputs[k];
          size_t r = static_cast<size_t>(in);
          if (root[r] != in || slot_of[r] < 0 || last_use[r] != si || g.value(in).type != ot) continue;
          joined = slot_of[r];
          break;
        }
      }
      if (joined >= 0) {
        slot_of[static_cast<size_t>(o)] = joined;
        Slot& sl = slots[static_cast<size_t>(joined)];
        sl.last = std::max(sl.last, std::max(si, last_use[static_cast<size_t>(o)]));
        plan.in_place[static_cast<size_t>(si)] = true;
        ++plan.in_place_nodes;
      } else {
        slot_of[static_cast<size_t>(o)] = static_cast<int>(slots.size());
        slots.push_back({p.bytes, si, std::max(si, last_use[static_cast<size_t>(o)]), 0});
      }
      plan.intermediate_bytes += p.bytes;
      ++plan.intermediates;
    }
  }

  // Greedy placement, largest first: each slot takes the lowest offset that does not overlap a
  // placed slot whose lifetime intersects its own.
  std::vector<Interval> intervals;
  for (const Slot& sl : slots) intervals.push_back({sl.bytes, sl.first, sl.last});
  std::vector<size_t> offsets = pack_intervals(intervals, kArenaAlignment, &plan.arena_bytes);
  for (size_t i = 0; i < slots.size(); ++i) slots[i].offset = offsets[i];
  for (size_t v = 0; v < nv; ++v) {
    if (slot_of[v] >= 0) plan.values[v].offset = slots[static_cast<size_t>(slot_of[v])].offset;
  }
  for (size_t si = 0; si < steps.size(); ++si)
    if (workspace_slot[si] >= 0) plan.workspace[si] = slots[static_cast<size_t>(workspace_slot[si])].offset;
  return plan;
}

}  // namespace weft::runtime
