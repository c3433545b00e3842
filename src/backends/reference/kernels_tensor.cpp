// PENDING: placeholder bodies, replaced operator by operator.
#include "backends/reference/kernels.h"

namespace weft::ref {

void kernel_ARGMAX(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_AVG_POOL2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CONV2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_CONV3D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_DEPTHWISE_CONV2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_FFT2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_MATMUL(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_MAX_POOL2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_RFFT2D(KernelArgs& args) { args.fail("kernel pending"); }
void kernel_TRANSPOSE_CONV2D(KernelArgs& args) { args.fail("kernel pending"); }

}  // namespace weft::ref
