// PENDING: placeholder bodies, replaced operator by operator.
#include "backends/reference/kernels.h"

namespace weft::ref {

void kernel_REDUCE_ALL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REDUCE_ANY(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REDUCE_MAX(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REDUCE_MIN(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REDUCE_PRODUCT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REDUCE_SUM(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CONCAT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_PAD(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RESHAPE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_REVERSE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SLICE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_TILE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_TRANSPOSE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_GATHER(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SCATTER(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RESIZE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CONST(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_IDENTITY(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CUSTOM(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_COND_IF(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_WHILE_LOOP(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_VARIABLE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_VARIABLE_WRITE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_VARIABLE_READ(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CONST_SHAPE(KernelArgs& args) { args.fail("kernel pending"); }

}  // namespace weft::ref
