// Shared by every TOSA shader of the Vulkan backend (see src/backends/vulkan/lower.h).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

// Element storage codes (vkb::ShaderType).
#define DT_BOOL 0
#define DT_I8 1
#define DT_I16 2
#define DT_I32 3
#define DT_I48 4
#define DT_F16 5
#define DT_F32 6

// The flat invocation index over a grid that Lowering::grid() spread over x and y. A macro, not a
// function: glslang gives gl_WorkGroupSize its value where it is used, and a function here comes
// before the shader's layout(local_size_x = ...) declaration, where the size is still (1,1,1); the
// y rows then overlapped and every element past 65535 * 65 stayed unwritten on devices whose
// maxComputeWorkGroupCount[0] is 65535 (lavapipe; found by the TOSA conformance suite).
#define flat_id() (gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// x rounded to the nearest fp16 value, ties to even, computed on the bits: a conversion instruction's
// rounding mode is the driver's choice unless the shader declares one (float controls), and Weft's
// fp16 results must not depend on the driver. Infinities and NaN pass; overflow gives infinity.
float rte16(float x) {
  float a = abs(x);
  if (isnan(x)) return x;
  if (a >= 65520.0) return x < 0.0 ? uintBitsToFloat(0xff800000u) : uintBitsToFloat(0x7f800000u);
  if (a < 6.103515625e-05) return roundEven(x * 16777216.0) * (1.0 / 16777216.0);  // subnormal: steps of 2^-24
  uint u = floatBitsToUint(x);
  u += 0x0FFFu + ((u >> 13) & 1u);
  return uintBitsToFloat(u & 0xFFFFE000u);
}

// TENSOR(B, N, T): binding B of set 0 viewed as every storage type, with element type T (a DT_*
// specialization constant): N_ldf / N_ldi / N_ldl load element i as float / int / int64 (bool and
// integers exactly, int48 from its int64 storage), N_stf / N_sti / N_stl store (integers wrap to the
// storage width, bool stores v != 0, int48 sign-extends from bit 47; floats round to fp16 when T is
// DT_F16, a float stored to an integer type truncates: round first). Only the branch of T survives
// specialization.
#define TENSOR_BUFFERS(B, N, Q)                                                            \
  layout(std430, set = 0, binding = B) Q buffer N##_B8 { int8_t N##_i8[]; };              \
  layout(std430, set = 0, binding = B) Q buffer N##_B16 { int16_t N##_i16[]; };           \
  layout(std430, set = 0, binding = B) Q buffer N##_B32 { int N##_i32[]; };               \
  layout(std430, set = 0, binding = B) Q buffer N##_B64 { int64_t N##_i64[]; };           \
  layout(std430, set = 0, binding = B) Q buffer N##_BH { float16_t N##_f16[]; };          \
  layout(std430, set = 0, binding = B) Q buffer N##_BF { float N##_f32[]; };
#define TENSOR_LOADS(N, T)                                                                 \
  float N##_ldf(uint i) {                                                               \
    if (T == DT_F32) return N##_f32[i];                                                 \
    if (T == DT_F16) return float(N##_f16[i]);                                          \
    if (T == DT_I32) return float(N##_i32[i]);                                          \
    if (T == DT_I16) return float(N##_i16[i]);                                          \
    if (T == DT_I48) return float(N##_i64[i]);                                          \
    return float(N##_i8[i]);                                                            \
  }                                                                                     \
  int N##_ldi(uint i) {                                                                 \
    if (T == DT_I32) return N##_i32[i];                                                 \
    if (T == DT_I16) return int(N##_i16[i]);                                            \
    if (T == DT_I48) return int(N##_i64[i]);                                            \
    if (T == DT_F32) return int(N##_f32[i]);                                            \
    if (T == DT_F16) return int(float(N##_f16[i]));                                     \
    return int(N##_i8[i]);                                                              \
  }                                                                                     \
  int64_t N##_ldl(uint i) {                                                             \
    if (T == DT_I48) return N##_i64[i];                                                 \
    if (T == DT_I32) return int64_t(N##_i32[i]);                                        \
    if (T == DT_I16) return int64_t(N##_i16[i]);                                        \
    if (T == DT_F32) return int64_t(N##_f32[i]);                                        \
    if (T == DT_F16) return int64_t(float(N##_f16[i]));                                 \
    return int64_t(N##_i8[i]);                                                          \
  }
#define TENSOR(B, N, T)                                                                    \
  TENSOR_BUFFERS(B, N, )                                                                   \
  TENSOR_LOADS(N, T)                                                                       \
  void N##_stf(uint i, float v) {                                                       \
    if (T == DT_F32) N##_f32[i] = v;                                                    \
    else if (T == DT_F16) N##_f16[i] = float16_t(rte16(v));                             \
    else if (T == DT_I32) N##_i32[i] = int(v);                                          \
    else if (T == DT_I16) N##_i16[i] = int16_t(int(v));                                 \
    else if (T == DT_I48) N##_i64[i] = int64_t(v);                                      \
    else if (T == DT_BOOL) N##_i8[i] = int8_t(v != 0.0 ? 1 : 0);                        \
    else N##_i8[i] = int8_t(int(v));                                                    \
  }                                                                                     \
  void N##_sti(uint i, int v) {                                                         \
    if (T == DT_I32) N##_i32[i] = v;                                                    \
    else if (T == DT_I16) N##_i16[i] = int16_t(v);                                      \
    else if (T == DT_I48) N##_i64[i] = int64_t(v);                                      \
    else if (T == DT_F32) N##_f32[i] = float(v);                                        \
    else if (T == DT_F16) N##_f16[i] = float16_t(rte16(float(v)));                      \
    else if (T == DT_BOOL) N##_i8[i] = int8_t(v != 0 ? 1 : 0);                          \
    else N##_i8[i] = int8_t(v);                                                         \
  }                                                                                     \
  void N##_stl(uint i, int64_t v) {                                                     \
    if (T == DT_I48) N##_i64[i] = (v << 16) >> 16;                                      \
    else if (T == DT_I32) N##_i32[i] = int(v);                                          \
    else if (T == DT_I16) N##_i16[i] = int16_t(v);                                      \
    else if (T == DT_F32) N##_f32[i] = float(v);                                        \
    else if (T == DT_F16) N##_f16[i] = float16_t(rte16(float(v)));                      \
    else if (T == DT_BOOL) N##_i8[i] = int8_t(v != 0 ? 1 : 0);                          \
    else N##_i8[i] = int8_t(v);                                                         \
  }

// TENSOR_RO(B, N, T): the same views of an operand the shader only reads (restrict readonly: the
// compiler may keep its loads in read-only caches), with the loads only.
#define TENSOR_RO(B, N, T)                                                                 \
  TENSOR_BUFFERS(B, N, restrict readonly)                                                  \
  TENSOR_LOADS(N, T)

// Shape decomposition: coordinate d of flat index `i` in a row-major shape given by its strides.
#define COORD(i, stride, dim) (((i) / uint(stride)) % uint(dim))

// Element offset of batch b along a batch axis that may be two axes merged (attention's batch and
// heads read in place as [B*H, ...]): with split > 1, (b / split) * outer + (b % split) * stride.
int split_batch_offset(int b, int split, int stride, int outer) {
  return split > 1 ? (b / split) * outer + (b % split) * stride : b * stride;
}
