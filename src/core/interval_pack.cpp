#include "core/interval_pack.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace weft {

std::vector<size_t> pack_intervals(const std::vector<Interval>& items, size_t alignment, size_t* total) {
  auto align = [&](size_t n) { return (n + alignment - 1) / alignment * alignment; };
  // Largest first, each at the lowest offset that no placed item with an overlapping lifetime uses.
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
  std::vector<size_t> offsets(items.size(), 0), placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of conflicting items
  size_t size = 0;
  for (size_t i : order) {
    const Interval& s = items[i];
    busy.clear();
    for (size_t p : placed) {
      const Interval& o = items[p];
      if (o.first <= s.last && s.first <= o.last) busy.emplace_back(offsets[p], offsets[p] + align(o.bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    const size_t need = align(s.bytes);
    for (const auto& [b, e] : busy) {
      if (offset + need <= b) break;
      offset = std::max(offset, e);
    }
    offsets[i] = offset;
    size = std::max(size, offset + need);
    placed.push_back(i);
  }
  if (total) *total = size;
  return offsets;
}

}  // namespace weft
