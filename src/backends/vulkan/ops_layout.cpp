// Vulkan backend: lowering of the layout operators (see lower.h).
#include "backends/vulkan/lower.h"

namespace weft::vkb {

void register_layout(std::map<Op, OpLowering>& t) { (void)t; }

}  // namespace weft::vkb
