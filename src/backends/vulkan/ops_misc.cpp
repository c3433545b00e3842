// Vulkan backend: lowering of the misc operators (see lower.h).
#include "backends/vulkan/lower.h"

namespace weft::vkb {

void register_misc(std::map<Op, OpLowering>& t) { (void)t; }

}  // namespace weft::vkb
