// PENDING: placeholder bodies, replaced operator by operator.
#include "backends/reference/kernels.h"

namespace weft::ref {

void kernel_CLAMP(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_ERF(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SIGMOID(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_TANH(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_ADD(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_ARITHMETIC_RIGHT_SHIFT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_BITWISE_AND(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_BITWISE_OR(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_BITWISE_XOR(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_INTDIV(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_AND(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_LEFT_SHIFT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_RIGHT_SHIFT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_OR(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_XOR(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_MAXIMUM(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_MINIMUM(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_MUL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_POW(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SUB(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_TABLE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_ABS(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_BITWISE_NOT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CEIL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CLZ(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_COS(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_EXP(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_FLOOR(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOG(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_LOGICAL_NOT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_NEGATE(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RECIPROCAL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RSQRT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SIN(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_SELECT(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_EQUAL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_GREATER(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_GREATER_EQUAL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CAST(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RESCALE(KernelArgs& args) { args.fail("kernel pending"); }

}  // namespace weft::ref
