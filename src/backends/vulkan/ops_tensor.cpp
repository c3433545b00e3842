// Vulkan backend: lowering of the tensor operators (see lower.h).
#include "backends/vulkan/lower.h"

namespace weft::vkb {

void register_tensor(std::map<Op, OpLowering>& t) { (void)t; }

}  // namespace weft::vkb
