// fp32 -> fp16 narrowing of a whole module, as Arm's model converter does it with
// --type-narrowing (the same four modes, so that a user's command line carries over):
//   none              nothing changes
//   full              every fp32 tensor, constant and accumulator becomes fp16
//   partial           as full, but CONV2D/CONV3D/DEPTHWISE_CONV2D/TRANSPOSE_CONV2D/AVG_POOL2D keep an
//                     fp32 accumulator (fp16 x fp16 with fp32 accumulate, a TOSA type row)
//   full_preserve_io  as full, but the entry graph's fp32 inputs and outputs stay fp32, with a CAST
//                     after each input and before each output
// Constants and CLAMP bounds beyond fp16's range saturate to +-65504 (counted); a CLAMP bound that
// is not 0 but below fp16's normal range (a division guard such as F.normalize's eps = 1e-12)
// becomes +-2^-14 rather than 0 or a subnormal whose reciprocal is inf (counted); a norm's epsilon
// that fp16 rounds to 0 (one value ADDed before an RSQRT only, as HF BERT's 1e-12) becomes +-2^-24
// (counted), so that a row of variance 0 stays 0 rather than NaN. A CAST whose two
// types become equal becomes an IDENTITY. CUSTOM nodes with fp32 operands are refused: their
// shaders were written for fp32 buffers. The narrowed module is verified; a node without an fp16
// type row is an error naming it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "weft/graph.h"

namespace weft::compiler {

enum class Narrowing { kNone, kFull, kPartial, kFullPreserveIo };
std::optional<Narrowing> parse_narrowing(std::string_view name);  // "none", "full", "partial", "full_preserve_io"
const char* narrowing_name(Narrowing n);

struct NarrowStats {
  size_t values = 0;             // fp32 values now fp16
  size_t constant_elements = 0;  // constant elements converted
  size_t saturated = 0;          // of which beyond fp16's range, saturated
  size_t bounds_raised = 0;      // nonzero CLAMP bounds below fp16's normal range, raised to +-2^-14
  size_t epsilons_raised = 0;    // nonzero one-value ADD constants before an RSQRT that fp16 rounds to 0, now +-2^-24
  size_t accumulators_kept = 0;  // partial: nodes that keep an fp32 accumulator
  size_t casts = 0;              // CASTs added at the entry graph's inputs and outputs
};

// "N fp32 tensors, M constant elements (S saturated to +-65504), A fp32 accumulators kept, C casts
// at the inputs and outputs": what `weft compile --type-narrowing` and the runtime's note report.
std::string narrow_summary(const NarrowStats& st);

// Throws Error(kUnsupported) for CUSTOM nodes with fp32 operands and the verifier's errors for
// nodes fp16 does not support; `m` is unchanged then.
NarrowStats narrow_fp32_to_fp16(Module& m, Narrowing mode);

// The same with the two choices apart: `fp32_accumulators` as partial, `preserve_io` as
// full_preserve_io. Both together are the runtime's reduced-precision mode (BackendOptions::precision):
// fp16 storage and arithmetic, fp32 accumulation where TOSA has the choice, fp32 at the boundary.
NarrowStats narrow_fp32_to_fp16(Module& m, bool fp32_accumulators, bool preserve_io);

}  // namespace weft::compiler
