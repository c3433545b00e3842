// Interval packing: placing items that each live over a range of steps in one arena so that items
// alive at the same time never share bytes. The memory planner (runtime/memory_plan.h) places a
// context's intermediates with it, the Vulkan device layer (device/vulkan/program.cpp) its device arenas.
#pragma once

#include <cstddef>
#include <vector>

namespace weft {

// Item i needs `bytes`
// from step `first` to step `last` (inclusive). Returns offsets (multiples of `alignment`) such that
// items whose lifetimes overlap never overlap in memory, largest items placed first, each at the
// lowest offset free for its lifetime; `total` (may be null) gets the arena size.
struct Interval {
  size_t bytes = 0;
  int first = 0, last = 0;
};
std::vector<size_t> pack_intervals(const std::vector<Interval>& items, size_t alignment, size_t* total);

}  // namespace weft
