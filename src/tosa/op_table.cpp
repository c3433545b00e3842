// Definitions of every TOSA 1.0 operator: operands, attributes and allowed type combinations
// per profile, as given by the TOSA 1.0.2 specification. Shape and ERROR_IF rules live in
// verify.cpp; semantics in backends/reference. Edit this table, not copies of it.
#include "weft/ops.h"

namespace weft {
namespace {
// clang-format off
// ARGMAX
constexpr ArgDef kARGMAX_in[] = {
    {"input", ArgKind::kTensor, "in_t", "shape1", 1, kRankMax}};
constexpr AttrDef kARGMAX_attr[] = {
    {"axis", AttrKind::kInt, "", 0},
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kARGMAX_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMaxMinus1}};
constexpr const char* kARGMAX_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kARGMAX_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 16", {kExtInt16}, {DType::kInt16, DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kInt32}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kInt32}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kInt32}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kInt32}}};
// AVG_POOL2D
constexpr ArgDef kAVG_POOL2D_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "[N,IH,IW,C]", 4, 4},
    {"input_zp", ArgKind::kTensor, "in_out_t", "[1]", 1, 1},
    {"output_zp", ArgKind::kTensor, "in_out_t", "[1]", 1, 1}};
constexpr AttrDef kAVG_POOL2D_attr[] = {
    {"kernel", AttrKind::kIntList, "", 2},
    {"stride", AttrKind::kIntList, "", 2},
    {"pad", AttrKind::kIntList, "", 4},
    {"acc_type", AttrKind::kAccType, "", 0}};
constexpr ArgDef kAVG_POOL2D_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "[N,OH,OW,C]", 4, 4}};
constexpr const char* kAVG_POOL2D_vars[] = {"in_out_t", "acc_t"};
constexpr TypeSupport kAVG_POOL2D_types[] = {
    {"signed 8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 16 with int32 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt32}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32}}};
// CONV2D
constexpr ArgDef kCONV2D_in[] = {
    {"input", ArgKind::kTensor, "in_t", "[N,IH,IW,IC]", 4, 4},
    {"weight", ArgKind::kTensor, "weight_t", "[OC,KH,KW,IC]", 4, 4},
    {"bias", ArgKind::kTensor, "out_t", "[BC]", 1, 1},
    {"input_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"weight_zp", ArgKind::kTensor, "weight_t", "[1]", 1, 1}};
constexpr AttrDef kCONV2D_attr[] = {
    {"pad", AttrKind::kIntList, "", 4},
    {"stride", AttrKind::kIntList, "", 2},
    {"dilation", AttrKind::kIntList, "", 2},
    {"acc_type", AttrKind::kAccType, "", 0},
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kCONV2D_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,OH,OW,OC]", 4, 4}};
constexpr const char* kCONV2D_vars[] = {"in_t", "weight_t", "out_t", "acc_t"};
constexpr TypeSupport kCONV2D_types[] = {
    {"signed 8x8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32}},
    {"signed 8x4 with int32 accumulate", {kExtInt4}, {DType::kInt8, DType::kInt4, DType::kInt32, DType::kInt32}},
    {"signed 16x8 with int48 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp8E4M3, DType::kFp16, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp8E5M2, DType::kFp16, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kBf16, DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32}}};
// CONV3D
constexpr ArgDef kCONV3D_in[] = {
    {"input", ArgKind::kTensor, "in_t", "[N,ID,IH,IW,IC]", 5, 5},
    {"weight", ArgKind::kTensor, "weight_t", "[OC,KD,KH,KW,IC]", 5, 5},
    {"bias", ArgKind::kTensor, "out_t", "[BC]", 1, 1},
    {"input_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"weight_zp", ArgKind::kTensor, "weight_t", "[1]", 1, 1}};
constexpr AttrDef kCONV3D_attr[] = {
    {"pad", AttrKind::kIntList, "", 6},
    {"stride", AttrKind::kIntList, "", 3},
    {"dilation", AttrKind::kIntList, "", 3},
    {"acc_type", AttrKind::kAccType, "", 0},
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kCONV3D_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,OD,OH,OW,OC]", 5, 5}};
constexpr const char* kCONV3D_vars[] = {"in_t", "weight_t", "out_t", "acc_t"};
constexpr TypeSupport kCONV3D_types[] = {
    {"signed 8x8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32}},
    {"signed 8x4 with int32 accumulate", {kExtInt4}, {DType::kInt8, DType::kInt4, DType::kInt32, DType::kInt32}},
    {"signed 16x8 with int48 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp8E4M3, DType::kFp16, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp8E5M2, DType::kFp16, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kBf16, DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32}}};
// DEPTHWISE_CONV2D
constexpr ArgDef kDEPTHWISE_CONV2D_in[] = {
    {"input", ArgKind::kTensor, "in_t", "[N,IH,IW,C]", 4, 4},
    {"weight", ArgKind::kTensor, "weight_t", "[KH,KW,C,M]", 4, 4},
    {"bias", ArgKind::kTensor, "out_t", "[BC]", 1, 1},
    {"input_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"weight_zp", ArgKind::kTensor, "weight_t", "[1]", 1, 1}};
constexpr AttrDef kDEPTHWISE_CONV2D_attr[] = {
    {"pad", AttrKind::kIntList, "", 4},
    {"stride", AttrKind::kIntList, "", 2},
    {"dilation", AttrKind::kIntList, "", 2},
    {"acc_type", AttrKind::kAccType, "", 0},
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kDEPTHWISE_CONV2D_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,OH,OW,C*M]", 4, 4}};
constexpr const char* kDEPTHWISE_CONV2D_vars[] = {"in_t", "weight_t", "out_t", "acc_t"};
constexpr TypeSupport kDEPTHWISE_CONV2D_types[] = {
    {"signed 8x8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32}},
    {"signed 8x4 with int32 accumulate", {kExtInt4}, {DType::kInt8, DType::kInt4, DType::kInt32, DType::kInt32}},
    {"signed 16x8 with int48 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp8E4M3, DType::kFp16, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp8E5M2, DType::kFp16, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kBf16, DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32}}};
// FFT2D
constexpr ArgDef kFFT2D_in[] = {
    {"input_real", ArgKind::kTensor, "in_out_t", "[N,H,W]", 3, 3},
    {"input_imag", ArgKind::kTensor, "in_out_t", "[N,H,W]", 3, 3}};
constexpr AttrDef kFFT2D_attr[] = {
    {"inverse", AttrKind::kBool, "", 0},
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kFFT2D_out[] = {
    {"output_real", ArgKind::kTensor, "in_out_t", "[N,H,W]", 3, 3},
    {"output_imag", ArgKind::kTensor, "in_out_t", "[N,H,W]", 3, 3}};
constexpr const char* kFFT2D_vars[] = {"in_out_t"};
constexpr TypeSupport kFFT2D_types[] = {
    {"fp32", {kExtFft}, {DType::kFp32}}};
// MATMUL
constexpr ArgDef kMATMUL_in[] = {
    {"A", ArgKind::kTensor, "in_t", "[N,H,C]", 3, 3},
    {"B", ArgKind::kTensor, "in_t", "[N,C,W]", 3, 3},
    {"A_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"B_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1}};
constexpr std::span<const AttrDef> kMATMUL_attr{};
constexpr ArgDef kMATMUL_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,H,W]", 3, 3}};
constexpr const char* kMATMUL_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kMATMUL_types[] = {
    {"signed 8x8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 16x16 with int48 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt48}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32}}};
// MAX_POOL2D
constexpr ArgDef kMAX_POOL2D_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "[N,IH,IW,C]", 4, 4}};
constexpr AttrDef kMAX_POOL2D_attr[] = {
    {"kernel", AttrKind::kIntList, "", 2},
    {"stride", AttrKind::kIntList, "", 2},
    {"pad", AttrKind::kIntList, "", 4},
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kMAX_POOL2D_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "[N,OH,OW,C]", 4, 4}};
constexpr const char* kMAX_POOL2D_vars[] = {"in_out_t"};
constexpr TypeSupport kMAX_POOL2D_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kExtInt16}, {DType::kInt16}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// RFFT2D
constexpr ArgDef kRFFT2D_in[] = {
    {"input_real", ArgKind::kTensor, "in_out_t", "[N,H,W]", 3, 3}};
constexpr AttrDef kRFFT2D_attr[] = {
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kRFFT2D_out[] = {
    {"output_real", ArgKind::kTensor, "in_out_t", "[N,H,W/2 + 1]", 3, 3},
    {"output_imag", ArgKind::kTensor, "in_out_t", "[N,H,W/2 + 1]", 3, 3}};
constexpr const char* kRFFT2D_vars[] = {"in_out_t"};
constexpr TypeSupport kRFFT2D_types[] = {
    {"fp32", {kExtFft}, {DType::kFp32}}};
// TRANSPOSE_CONV2D
constexpr ArgDef kTRANSPOSE_CONV2D_in[] = {
    {"input", ArgKind::kTensor, "in_t", "[N,IH,IW,IC]", 4, 4},
    {"weight", ArgKind::kTensor, "weight_t", "[OC,KH,KW,IC]", 4, 4},
    {"bias", ArgKind::kTensor, "out_t", "[BC]", 1, 1},
    {"input_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"weight_zp", ArgKind::kTensor, "weight_t", "[1]", 1, 1}};
constexpr AttrDef kTRANSPOSE_CONV2D_attr[] = {
    {"out_pad", AttrKind::kIntList, "", 4},
    {"stride", AttrKind::kIntList, "", 2},
    {"acc_type", AttrKind::kAccType, "", 0},
    {"local_bound", AttrKind::kBool, "", 0}};
constexpr ArgDef kTRANSPOSE_CONV2D_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,OH,OW,OC]", 4, 4}};
constexpr const char* kTRANSPOSE_CONV2D_vars[] = {"in_t", "weight_t", "out_t", "acc_t"};
constexpr TypeSupport kTRANSPOSE_CONV2D_types[] = {
    {"signed 8x8 with int32 accumulate", {kProInt}, {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32}},
    {"signed 8x4 with int32 accumulate", {kExtInt4}, {DType::kInt8, DType::kInt4, DType::kInt32, DType::kInt32}},
    {"signed 16x8 with int48 accumulate", {kExtInt16}, {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48}},
    {"fp8e4m3 with fp16 accumulate", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp8E4M3, DType::kFp16, DType::kFp16}},
    {"fp8e5m2 with fp16 accumulate", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp8E5M2, DType::kFp16, DType::kFp16}},
    {"fp16 with fp16 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16}},
    {"fp16 with fp32 accumulate", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32}},
    {"bf16 with fp32 accumulate", {kExtBf16}, {DType::kBf16, DType::kBf16, DType::kBf16, DType::kFp32}},
    {"fp32 with fp32 accumulate", {kProFp}, {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32}}};
// CLAMP
constexpr ArgDef kCLAMP_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr AttrDef kCLAMP_attr[] = {
    {"min_val", AttrKind::kScalar, "in_out_t", 0},
    {"max_val", AttrKind::kScalar, "in_out_t", 0},
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kCLAMP_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kCLAMP_vars[] = {"in_out_t"};
constexpr TypeSupport kCLAMP_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kExtInt16}, {DType::kInt16}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// ERF
constexpr ArgDef kERF_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kERF_attr{};
constexpr ArgDef kERF_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kERF_vars[] = {"in_out_t"};
constexpr TypeSupport kERF_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// SIGMOID
constexpr ArgDef kSIGMOID_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kSIGMOID_attr{};
constexpr ArgDef kSIGMOID_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kSIGMOID_vars[] = {"in_out_t"};
constexpr TypeSupport kSIGMOID_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// TANH
constexpr ArgDef kTANH_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kTANH_attr{};
constexpr ArgDef kTANH_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kTANH_vars[] = {"in_out_t"};
constexpr TypeSupport kTANH_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// ADD
constexpr ArgDef kADD_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kADD_attr{};
constexpr ArgDef kADD_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kADD_vars[] = {"in_out_t"};
constexpr TypeSupport kADD_types[] = {
    {"signed 32", {kProInt, kProFp}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// ARITHMETIC_RIGHT_SHIFT
constexpr ArgDef kARITHMETIC_RIGHT_SHIFT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr AttrDef kARITHMETIC_RIGHT_SHIFT_attr[] = {
    {"round", AttrKind::kBool, "", 0}};
constexpr ArgDef kARITHMETIC_RIGHT_SHIFT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kARITHMETIC_RIGHT_SHIFT_vars[] = {"in_out_t"};
constexpr TypeSupport kARITHMETIC_RIGHT_SHIFT_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}}};
// BITWISE_AND
constexpr ArgDef kBITWISE_AND_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kBITWISE_AND_attr{};
constexpr ArgDef kBITWISE_AND_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kBITWISE_AND_vars[] = {"in_out_t"};
constexpr TypeSupport kBITWISE_AND_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}}};
// BITWISE_OR
constexpr ArgDef kBITWISE_OR_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kBITWISE_OR_attr{};
constexpr ArgDef kBITWISE_OR_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kBITWISE_OR_vars[] = {"in_out_t"};
constexpr TypeSupport kBITWISE_OR_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}}};
// BITWISE_XOR
constexpr ArgDef kBITWISE_XOR_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kBITWISE_XOR_attr{};
constexpr ArgDef kBITWISE_XOR_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kBITWISE_XOR_vars[] = {"in_out_t"};
constexpr TypeSupport kBITWISE_XOR_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}}};
// INTDIV
constexpr ArgDef kINTDIV_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kINTDIV_attr{};
constexpr ArgDef kINTDIV_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kINTDIV_vars[] = {"in_out_t"};
constexpr TypeSupport kINTDIV_types[] = {
    {"signed 32", {kProInt, kProFp}, {DType::kInt32}}};
// LOGICAL_AND
constexpr ArgDef kLOGICAL_AND_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_AND_attr{};
constexpr ArgDef kLOGICAL_AND_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_AND_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_AND_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// LOGICAL_LEFT_SHIFT
constexpr ArgDef kLOGICAL_LEFT_SHIFT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_LEFT_SHIFT_attr{};
constexpr ArgDef kLOGICAL_LEFT_SHIFT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_LEFT_SHIFT_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_LEFT_SHIFT_types[] = {
    {"signed 8", {kProInt, kProFp}, {DType::kInt8}},
    {"signed 16", {kProInt, kProFp}, {DType::kInt16}},
    {"signed 32", {kProInt, kProFp}, {DType::kInt32}}};
// LOGICAL_RIGHT_SHIFT
constexpr ArgDef kLOGICAL_RIGHT_SHIFT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_RIGHT_SHIFT_attr{};
constexpr ArgDef kLOGICAL_RIGHT_SHIFT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_RIGHT_SHIFT_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_RIGHT_SHIFT_types[] = {
    {"signed 8", {kProInt, kProFp}, {DType::kInt8}},
    {"signed 16", {kProInt, kProFp}, {DType::kInt16}},
    {"signed 32", {kProInt, kProFp}, {DType::kInt32}}};
// LOGICAL_OR
constexpr ArgDef kLOGICAL_OR_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_OR_attr{};
constexpr ArgDef kLOGICAL_OR_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_OR_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_OR_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// LOGICAL_XOR
constexpr ArgDef kLOGICAL_XOR_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_XOR_attr{};
constexpr ArgDef kLOGICAL_XOR_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_XOR_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_XOR_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// MAXIMUM
constexpr ArgDef kMAXIMUM_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr AttrDef kMAXIMUM_attr[] = {
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kMAXIMUM_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kMAXIMUM_vars[] = {"in_out_t"};
constexpr TypeSupport kMAXIMUM_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// MINIMUM
constexpr ArgDef kMINIMUM_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr AttrDef kMINIMUM_attr[] = {
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kMINIMUM_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kMINIMUM_vars[] = {"in_out_t"};
constexpr TypeSupport kMINIMUM_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// MUL
constexpr ArgDef kMUL_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_t", "shape2", 0, kRankMax},
    {"shift", ArgKind::kTensor, "i8_t", "[1]", 1, 1}};
constexpr std::span<const AttrDef> kMUL_attr{};
constexpr ArgDef kMUL_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kMUL_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kMUL_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 16", {kProInt}, {DType::kInt16, DType::kInt32}},
    {"signed 32", {kProInt, kProFp}, {DType::kInt32, DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kFp32}}};
// POW
constexpr ArgDef kPOW_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kPOW_attr{};
constexpr ArgDef kPOW_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kPOW_vars[] = {"in_out_t"};
constexpr TypeSupport kPOW_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// SUB
constexpr ArgDef kSUB_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kSUB_attr{};
constexpr ArgDef kSUB_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kSUB_vars[] = {"in_out_t"};
constexpr TypeSupport kSUB_types[] = {
    {"signed 32", {kProInt, kProFp}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// TABLE
constexpr ArgDef kTABLE_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape", 0, kRankMax},
    {"table", ArgKind::kTensor, "table_t", "[TABLE_SIZE]", 1, 1}};
constexpr std::span<const AttrDef> kTABLE_attr{};
constexpr ArgDef kTABLE_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kTABLE_vars[] = {"in_t", "table_t", "out_t"};
constexpr TypeSupport kTABLE_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8, DType::kInt8, DType::kInt8}},
    {"signed 16", {kExtInt16}, {DType::kInt16, DType::kInt16, DType::kInt32}}};
// ABS
constexpr ArgDef kABS_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kABS_attr{};
constexpr ArgDef kABS_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kABS_vars[] = {"in_out_t"};
constexpr TypeSupport kABS_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// BITWISE_NOT
constexpr ArgDef kBITWISE_NOT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kBITWISE_NOT_attr{};
constexpr ArgDef kBITWISE_NOT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kBITWISE_NOT_vars[] = {"in_out_t"};
constexpr TypeSupport kBITWISE_NOT_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}}};
// CEIL
constexpr ArgDef kCEIL_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kCEIL_attr{};
constexpr ArgDef kCEIL_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kCEIL_vars[] = {"in_out_t"};
constexpr TypeSupport kCEIL_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// CLZ
constexpr ArgDef kCLZ_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kCLZ_attr{};
constexpr ArgDef kCLZ_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kCLZ_vars[] = {"in_out_t"};
constexpr TypeSupport kCLZ_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32}}};
// COS
constexpr ArgDef kCOS_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kCOS_attr{};
constexpr ArgDef kCOS_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kCOS_vars[] = {"in_out_t"};
constexpr TypeSupport kCOS_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// EXP
constexpr ArgDef kEXP_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kEXP_attr{};
constexpr ArgDef kEXP_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kEXP_vars[] = {"in_out_t"};
constexpr TypeSupport kEXP_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// FLOOR
constexpr ArgDef kFLOOR_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kFLOOR_attr{};
constexpr ArgDef kFLOOR_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kFLOOR_vars[] = {"in_out_t"};
constexpr TypeSupport kFLOOR_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// LOG
constexpr ArgDef kLOG_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOG_attr{};
constexpr ArgDef kLOG_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOG_vars[] = {"in_out_t"};
constexpr TypeSupport kLOG_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// LOGICAL_NOT
constexpr ArgDef kLOGICAL_NOT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kLOGICAL_NOT_attr{};
constexpr ArgDef kLOGICAL_NOT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kLOGICAL_NOT_vars[] = {"in_out_t"};
constexpr TypeSupport kLOGICAL_NOT_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// NEGATE
constexpr ArgDef kNEGATE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax},
    {"input1_zp", ArgKind::kTensor, "in_out_t", "[1]", 1, 1},
    {"output_zp", ArgKind::kTensor, "in_out_t", "[1]", 1, 1}};
constexpr std::span<const AttrDef> kNEGATE_attr{};
constexpr ArgDef kNEGATE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kNEGATE_vars[] = {"in_out_t", "acc_t"};
constexpr TypeSupport kNEGATE_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 16", {kProInt}, {DType::kInt16, DType::kInt32}},
    {"signed 32", {kProInt}, {DType::kInt32, DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kFp32}}};
// RECIPROCAL
constexpr ArgDef kRECIPROCAL_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kRECIPROCAL_attr{};
constexpr ArgDef kRECIPROCAL_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kRECIPROCAL_vars[] = {"in_out_t"};
constexpr TypeSupport kRECIPROCAL_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// RSQRT
constexpr ArgDef kRSQRT_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kRSQRT_attr{};
constexpr ArgDef kRSQRT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kRSQRT_vars[] = {"in_out_t"};
constexpr TypeSupport kRSQRT_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// SIN
constexpr ArgDef kSIN_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kSIN_attr{};
constexpr ArgDef kSIN_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kSIN_vars[] = {"in_out_t"};
constexpr TypeSupport kSIN_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// SELECT
constexpr ArgDef kSELECT_in[] = {
    {"input1", ArgKind::kTensor, "bool_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_out_t", "shape2", 0, kRankMax},
    {"input3", ArgKind::kTensor, "in_out_t", "shape3", 0, kRankMax}};
constexpr std::span<const AttrDef> kSELECT_attr{};
constexpr ArgDef kSELECT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kSELECT_vars[] = {"in_out_t"};
constexpr TypeSupport kSELECT_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// EQUAL
constexpr ArgDef kEQUAL_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kEQUAL_attr{};
constexpr ArgDef kEQUAL_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kEQUAL_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kEQUAL_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32, DType::kBool}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kBool}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBool}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kBool}}};
// GREATER
constexpr ArgDef kGREATER_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kGREATER_attr{};
constexpr ArgDef kGREATER_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kGREATER_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kGREATER_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32, DType::kBool}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kBool}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBool}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kBool}}};
// GREATER_EQUAL
constexpr ArgDef kGREATER_EQUAL_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape1", 0, kRankMax},
    {"input2", ArgKind::kTensor, "in_t", "shape2", 0, kRankMax}};
constexpr std::span<const AttrDef> kGREATER_EQUAL_attr{};
constexpr ArgDef kGREATER_EQUAL_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kGREATER_EQUAL_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kGREATER_EQUAL_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32, DType::kBool}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kBool}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBool}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kBool}}};
// REDUCE_ALL
constexpr ArgDef kREDUCE_ALL_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_ALL_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kREDUCE_ALL_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_ALL_vars[] = {"in_out_t"};
constexpr TypeSupport kREDUCE_ALL_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// REDUCE_ANY
constexpr ArgDef kREDUCE_ANY_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_ANY_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kREDUCE_ANY_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_ANY_vars[] = {"in_out_t"};
constexpr TypeSupport kREDUCE_ANY_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}}};
// REDUCE_MAX
constexpr ArgDef kREDUCE_MAX_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_MAX_attr[] = {
    {"axis", AttrKind::kInt, "", 0},
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kREDUCE_MAX_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_MAX_vars[] = {"in_out_t"};
constexpr TypeSupport kREDUCE_MAX_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// REDUCE_MIN
constexpr ArgDef kREDUCE_MIN_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_MIN_attr[] = {
    {"axis", AttrKind::kInt, "", 0},
    {"nan_mode", AttrKind::kNanMode, "", 0}};
constexpr ArgDef kREDUCE_MIN_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_MIN_vars[] = {"in_out_t"};
constexpr TypeSupport kREDUCE_MIN_types[] = {
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// REDUCE_PRODUCT
constexpr ArgDef kREDUCE_PRODUCT_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_PRODUCT_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kREDUCE_PRODUCT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_PRODUCT_vars[] = {"in_out_t"};
constexpr TypeSupport kREDUCE_PRODUCT_types[] = {
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// REDUCE_SUM
constexpr ArgDef kREDUCE_SUM_in[] = {
    {"input", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kREDUCE_SUM_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kREDUCE_SUM_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREDUCE_SUM_vars[] = {"in_out_t", "acc_t"};
constexpr TypeSupport kREDUCE_SUM_types[] = {
    {"signed 32", {kProInt}, {DType::kInt32, DType::kInt32}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kFp32}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kFp32}}};
// CONCAT
constexpr ArgDef kCONCAT_in[] = {
    {"input1", ArgKind::kTensorList, "in_out_t", "shapes1", 1, kRankMax}};
constexpr AttrDef kCONCAT_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kCONCAT_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kCONCAT_vars[] = {"in_out_t"};
constexpr TypeSupport kCONCAT_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kExtInt16}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// PAD
constexpr ArgDef kPAD_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax},
    {"padding", ArgKind::kShape, "", "[2*rank(shape1)]", 1, 1},
    {"pad_const", ArgKind::kTensor, "in_out_t", "[1]", 1, 1}};
constexpr std::span<const AttrDef> kPAD_attr{};
constexpr ArgDef kPAD_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kPAD_vars[] = {"in_out_t"};
constexpr TypeSupport kPAD_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// RESHAPE
constexpr ArgDef kRESHAPE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 0, kRankMax},
    {"shape", ArgKind::kShape, "", "[rank(shape)]", 1, 1}};
constexpr std::span<const AttrDef> kRESHAPE_attr{};
constexpr ArgDef kRESHAPE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kRESHAPE_vars[] = {"in_out_t"};
constexpr TypeSupport kRESHAPE_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// REVERSE
constexpr ArgDef kREVERSE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr AttrDef kREVERSE_attr[] = {
    {"axis", AttrKind::kInt, "", 0}};
constexpr ArgDef kREVERSE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kREVERSE_vars[] = {"in_out_t"};
constexpr TypeSupport kREVERSE_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// SLICE
constexpr ArgDef kSLICE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax},
    {"start", ArgKind::kShape, "", "[rank(shape1)]", 1, 1},
    {"size", ArgKind::kShape, "", "[rank(shape1)]", 1, 1}};
constexpr std::span<const AttrDef> kSLICE_attr{};
constexpr ArgDef kSLICE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kSLICE_vars[] = {"in_out_t"};
constexpr TypeSupport kSLICE_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// TILE
constexpr ArgDef kTILE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax},
    {"multiples", ArgKind::kShape, "", "[rank(shape1)]", 1, 1}};
constexpr std::span<const AttrDef> kTILE_attr{};
constexpr ArgDef kTILE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kTILE_vars[] = {"in_out_t"};
constexpr TypeSupport kTILE_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// TRANSPOSE
constexpr ArgDef kTRANSPOSE_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape1", 1, kRankMax}};
constexpr AttrDef kTRANSPOSE_attr[] = {
    {"perms", AttrKind::kIntList, "", kLenRankOfInput0}};
constexpr ArgDef kTRANSPOSE_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 1, kRankMax}};
constexpr const char* kTRANSPOSE_vars[] = {"in_out_t"};
constexpr TypeSupport kTRANSPOSE_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"signed 8", {kProInt}, {DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// GATHER
constexpr ArgDef kGATHER_in[] = {
    {"values", ArgKind::kTensor, "in_out_t", "[N,K,C]", 3, 3},
    {"indices", ArgKind::kTensor, "index_t", "[N,W]", 2, 2}};
constexpr std::span<const AttrDef> kGATHER_attr{};
constexpr ArgDef kGATHER_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "[N,W,C]", 3, 3}};
constexpr const char* kGATHER_vars[] = {"index_t", "in_out_t"};
constexpr TypeSupport kGATHER_types[] = {
    {"signed 8", {kProInt}, {DType::kInt32, DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt32, DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32, DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kInt32, DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kInt32, DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kInt32, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kInt32, DType::kBf16}},
    {"fp32", {kProFp}, {DType::kInt32, DType::kFp32}}};
// SCATTER
constexpr ArgDef kSCATTER_in[] = {
    {"values_in", ArgKind::kTensor, "in_out_t", "[N,K,C]", 3, 3},
    {"indices", ArgKind::kTensor, "index_t", "[N,W]", 2, 2},
    {"input", ArgKind::kTensor, "in_out_t", "[N,W,C]", 3, 3}};
constexpr std::span<const AttrDef> kSCATTER_attr{};
constexpr ArgDef kSCATTER_out[] = {
    {"values_out", ArgKind::kTensor, "in_out_t", "[N,K,C]", 3, 3}};
constexpr const char* kSCATTER_vars[] = {"index_t", "in_out_t"};
constexpr TypeSupport kSCATTER_types[] = {
    {"signed 8", {kProInt}, {DType::kInt32, DType::kInt8}},
    {"signed 16", {kProInt}, {DType::kInt32, DType::kInt16}},
    {"signed 32", {kProInt}, {DType::kInt32, DType::kInt32}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kInt32, DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kInt32, DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kInt32, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kInt32, DType::kBf16}},
    {"fp32", {kProFp}, {DType::kInt32, DType::kFp32}}};
// RESIZE
constexpr ArgDef kRESIZE_in[] = {
    {"input", ArgKind::kTensor, "in_t", "[N,IH,IW,C]", 4, 4},
    {"scale", ArgKind::kShape, "", "[4]", 1, 1},
    {"offset", ArgKind::kShape, "", "[2]", 1, 1},
    {"border", ArgKind::kShape, "", "[2]", 1, 1}};
constexpr AttrDef kRESIZE_attr[] = {
    {"mode", AttrKind::kResizeMode, "", 0}};
constexpr ArgDef kRESIZE_out[] = {
    {"output", ArgKind::kTensor, "out_t", "[N,OH,OW,C]", 4, 4}};
constexpr const char* kRESIZE_vars[] = {"resize_t", "in_t", "out_t"};
constexpr TypeSupport kRESIZE_types[] = {
    {"signed 8, bilinear", {kProInt}, {DType::kInt16, DType::kInt8, DType::kInt32}},
    {"signed 8, nearest", {kProInt}, {DType::kInt16, DType::kInt8, DType::kInt8}},
    {"signed 16, bilinear", {kExtInt16}, {DType::kInt16, DType::kInt16, DType::kInt48}},
    {"signed 16, nearest", {kExtInt16}, {DType::kInt16, DType::kInt16, DType::kInt16}},
    {"fp16", {kProFp}, {DType::kFp16, DType::kFp16, DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16, DType::kBf16, DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32, DType::kFp32, DType::kFp32}}};
// CAST
constexpr ArgDef kCAST_in[] = {
    {"input", ArgKind::kTensor, "in_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kCAST_attr{};
constexpr ArgDef kCAST_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kCAST_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kCAST_types[] = {
    {"bool to signed 8", {kProInt}, {DType::kBool, DType::kInt8}},
    {"bool to signed 16", {kProInt}, {DType::kBool, DType::kInt16}},
    {"bool to signed 32", {kProInt}, {DType::kBool, DType::kInt32}},
    {"signed 8 to bool", {kProInt}, {DType::kInt8, DType::kBool}},
    {"signed 8 to signed 16", {kProInt}, {DType::kInt8, DType::kInt16}},
    {"signed 8 to signed 32", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"signed 8 to fp16", {kProFp}, {DType::kInt8, DType::kFp16}},
    {"signed 8 to bf16", {kExtBf16}, {DType::kInt8, DType::kBf16}},
    {"signed 8 to fp32", {kProFp}, {DType::kInt8, DType::kFp32}},
    {"signed 16 to bool", {kProInt}, {DType::kInt16, DType::kBool}},
    {"signed 16 to signed 8", {kProInt}, {DType::kInt16, DType::kInt8}},
    {"signed 16 to signed 32", {kProInt}, {DType::kInt16, DType::kInt32}},
    {"signed 16 to fp16", {kProFp}, {DType::kInt16, DType::kFp16}},
    {"signed 16 to bf16", {kExtBf16}, {DType::kInt16, DType::kBf16}},
    {"signed 16 to fp32", {kProFp}, {DType::kInt16, DType::kFp32}},
    {"signed 32 to bool", {kProInt}, {DType::kInt32, DType::kBool}},
    {"signed 32 to signed 8", {kProInt}, {DType::kInt32, DType::kInt8}},
    {"signed 32 to signed 16", {kProInt}, {DType::kInt32, DType::kInt16}},
    {"signed 32 to fp16", {kProFp}, {DType::kInt32, DType::kFp16}},
    {"signed 32 to bf16", {kExtBf16}, {DType::kInt32, DType::kBf16}},
    {"signed 32 to fp32", {kProFp}, {DType::kInt32, DType::kFp32}},
    {"bf16 to signed 8", {kExtBf16}, {DType::kBf16, DType::kInt8}},
    {"bf16 to signed 16", {kExtBf16}, {DType::kBf16, DType::kInt16}},
    {"bf16 to signed 32", {kExtBf16}, {DType::kBf16, DType::kInt32}},
    {"bf16 to fp8e4m3", {kExtBf16 | kExtFp8E4M3}, {DType::kBf16, DType::kFp8E4M3}},
    {"bf16 to fp8e5m2", {kExtBf16 | kExtFp8E5M2}, {DType::kBf16, DType::kFp8E5M2}},
    {"bf16 to fp32", {kExtBf16}, {DType::kBf16, DType::kFp32}},
    {"fp8e4m3 to fp16", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp16}},
    {"fp8e4m3 to bf16", {kExtFp8E4M3 | kExtBf16}, {DType::kFp8E4M3, DType::kBf16}},
    {"fp8e4m3 to fp32", {kExtFp8E4M3}, {DType::kFp8E4M3, DType::kFp32}},
    {"fp8e5m2 to fp16", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp16}},
    {"fp8e5m2 to bf16", {kExtFp8E5M2 | kExtBf16}, {DType::kFp8E5M2, DType::kBf16}},
    {"fp8e5m2 to fp32", {kExtFp8E5M2}, {DType::kFp8E5M2, DType::kFp32}},
    {"fp16 to signed 8", {kProFp}, {DType::kFp16, DType::kInt8}},
    {"fp16 to signed 16", {kProFp}, {DType::kFp16, DType::kInt16}},
    {"fp16 to signed 32", {kProFp}, {DType::kFp16, DType::kInt32}},
    {"fp16 to fp8e4m3", {kExtFp8E4M3}, {DType::kFp16, DType::kFp8E4M3}},
    {"fp16 to fp8e5m2", {kExtFp8E5M2}, {DType::kFp16, DType::kFp8E5M2}},
    {"fp16 to fp32", {kProFp}, {DType::kFp16, DType::kFp32}},
    {"fp32 to signed 8", {kProFp}, {DType::kFp32, DType::kInt8}},
    {"fp32 to signed 16", {kProFp}, {DType::kFp32, DType::kInt16}},
    {"fp32 to signed 32", {kProFp}, {DType::kFp32, DType::kInt32}},
    {"fp32 to fp8e4m3", {kExtFp8E4M3}, {DType::kFp32, DType::kFp8E4M3}},
    {"fp32 to fp8e5m2", {kExtFp8E5M2}, {DType::kFp32, DType::kFp8E5M2}},
    {"fp32 to bf16", {kExtBf16}, {DType::kFp32, DType::kBf16}},
    {"fp32 to fp16", {kProFp}, {DType::kFp32, DType::kFp16}}};
// RESCALE
constexpr ArgDef kRESCALE_in[] = {
    {"input", ArgKind::kTensor, "in_t", "shape", 0, kRankMax},
    {"multiplier", ArgKind::kTensor, "mul_t", "[NC]", 1, 1},
    {"shift", ArgKind::kTensor, "i8_t", "[NC]", 1, 1},
    {"input_zp", ArgKind::kTensor, "in_t", "[1]", 1, 1},
    {"output_zp", ArgKind::kTensor, "out_t", "[1]", 1, 1}};
constexpr AttrDef kRESCALE_attr[] = {
    {"scale32", AttrKind::kBool, "", 0},
    {"rounding_mode", AttrKind::kRoundingMode, "", 0},
    {"per_channel", AttrKind::kBool, "", 0},
    {"input_unsigned", AttrKind::kBool, "", 0},
    {"output_unsigned", AttrKind::kBool, "", 0}};
constexpr ArgDef kRESCALE_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kRESCALE_vars[] = {"in_t", "out_t"};
constexpr TypeSupport kRESCALE_types[] = {
    {"8-bit to 8-bit", {kProInt}, {DType::kInt8, DType::kInt8}},
    {"8-bit to 16-bit", {kProInt}, {DType::kInt8, DType::kInt16}},
    {"8-bit to 32-bit", {kProInt}, {DType::kInt8, DType::kInt32}},
    {"16-bit to 8-bit", {kProInt}, {DType::kInt16, DType::kInt8}},
    {"16-bit to 16-bit", {kProInt}, {DType::kInt16, DType::kInt16}},
    {"16-bit to 32-bit", {kProInt}, {DType::kInt16, DType::kInt32}},
    {"32-bit to 8-bit", {kProInt}, {DType::kInt32, DType::kInt8}},
    {"32-bit to 16-bit", {kProInt}, {DType::kInt32, DType::kInt16}},
    {"32-bit to 32-bit", {kProInt}, {DType::kInt32, DType::kInt32}},
    {"48-bit to 8-bit", {kExtInt16}, {DType::kInt48, DType::kInt8}},
    {"48-bit to 16-bit", {kExtInt16}, {DType::kInt48, DType::kInt16}},
    {"48-bit to 32-bit", {kExtInt16}, {DType::kInt48, DType::kInt32}}};
// CONST
constexpr std::span<const ArgDef> kCONST_in{};
constexpr AttrDef kCONST_attr[] = {
    {"values", AttrKind::kTensor, "out_t", 0}};
constexpr ArgDef kCONST_out[] = {
    {"output", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kCONST_vars[] = {"out_t"};
constexpr TypeSupport kCONST_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"4-bit", {kExtInt4}, {DType::kInt4}},
    {"8-bit", {kProInt, kProFp}, {DType::kInt8}},
    {"16-bit", {kProInt, kProFp}, {DType::kInt16}},
    {"32-bit", {kProInt, kProFp}, {DType::kInt32}},
    {"48-bit", {kExtInt16}, {DType::kInt48}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// IDENTITY
constexpr ArgDef kIDENTITY_in[] = {
    {"input1", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr std::span<const AttrDef> kIDENTITY_attr{};
constexpr ArgDef kIDENTITY_out[] = {
    {"output", ArgKind::kTensor, "in_out_t", "shape", 0, kRankMax}};
constexpr const char* kIDENTITY_vars[] = {"in_out_t"};
constexpr TypeSupport kIDENTITY_types[] = {
    {"Boolean", {kProInt, kProFp}, {DType::kBool}},
    {"4-bit", {kExtInt4}, {DType::kInt4}},
    {"8-bit", {kProInt, kProFp}, {DType::kInt8}},
    {"16-bit", {kProInt, kProFp}, {DType::kInt16}},
    {"32-bit", {kProInt, kProFp}, {DType::kInt32}},
    {"48-bit", {kExtInt16}, {DType::kInt48}},
    {"fp8e4m3", {kExtFp8E4M3}, {DType::kFp8E4M3}},
    {"fp8e5m2", {kExtFp8E5M2}, {DType::kFp8E5M2}},
    {"fp16", {kProFp}, {DType::kFp16}},
    {"bf16", {kExtBf16}, {DType::kBf16}},
    {"fp32", {kProFp}, {DType::kFp32}}};
// CUSTOM
constexpr ArgDef kCUSTOM_in[] = {
    {"input_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr AttrDef kCUSTOM_attr[] = {
    {"operator_name", AttrKind::kString, "", 0},
    {"domain_name", AttrKind::kString, "", 0},
    {"implementation_attrs", AttrKind::kString, "", 0}};
constexpr ArgDef kCUSTOM_out[] = {
    {"output_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr std::span<const char* const> kCUSTOM_vars{};
constexpr TypeSupport kCUSTOM_types[] = {
    {"All", {kProInt, kProFp}, {}}};
// COND_IF
constexpr ArgDef kCOND_IF_in[] = {
    {"condition", ArgKind::kTensor, "bool_t", "shape", 0, kRankMax},
    {"input_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr AttrDef kCOND_IF_attr[] = {
    {"then_graph", AttrKind::kGraph, "", 0},
    {"else_graph", AttrKind::kGraph, "", 0}};
constexpr ArgDef kCOND_IF_out[] = {
    {"output_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr std::span<const char* const> kCOND_IF_vars{};
constexpr TypeSupport kCOND_IF_types[] = {
    {"All", {kExtControlFlow}, {}}};
// WHILE_LOOP
constexpr ArgDef kWHILE_LOOP_in[] = {
    {"input_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr AttrDef kWHILE_LOOP_attr[] = {
    {"cond_graph", AttrKind::kGraph, "", 0},
    {"body_graph", AttrKind::kGraph, "", 0}};
constexpr ArgDef kWHILE_LOOP_out[] = {
    {"output_list", ArgKind::kTensorList, "", "", kRankAny, kRankAny}};
constexpr std::span<const char* const> kWHILE_LOOP_vars{};
constexpr TypeSupport kWHILE_LOOP_types[] = {
    {"All", {kExtControlFlow}, {}}};
// VARIABLE
constexpr std::span<const ArgDef> kVARIABLE_in{};
constexpr AttrDef kVARIABLE_attr[] = {
    {"name", AttrKind::kString, "", 0},
    {"var_shape", AttrKind::kIntList, "", kLenAny},
    {"type", AttrKind::kVarType, "", 0},
    {"initial_value", AttrKind::kTensor, "in_t", 0}};
constexpr std::span<const ArgDef> kVARIABLE_out{};
constexpr const char* kVARIABLE_vars[] = {"in_t"};
constexpr TypeSupport kVARIABLE_types[] = {
    {"signed 8", {kProInt | kExtVariable}, {DType::kInt8}},
    {"fp16", {kProFp | kExtVariable}, {DType::kFp16}},
    {"fp32", {kProFp | kExtVariable}, {DType::kFp32}}};
// VARIABLE_WRITE
constexpr ArgDef kVARIABLE_WRITE_in[] = {
    {"input1", ArgKind::kTensor, "in_t", "shape", 0, kRankMax}};
constexpr AttrDef kVARIABLE_WRITE_attr[] = {
    {"name", AttrKind::kString, "", 0}};
constexpr std::span<const ArgDef> kVARIABLE_WRITE_out{};
constexpr const char* kVARIABLE_WRITE_vars[] = {"in_t"};
constexpr TypeSupport kVARIABLE_WRITE_types[] = {
    {"signed 8", {kProInt | kExtVariable}, {DType::kInt8}},
    {"fp16", {kProFp | kExtVariable}, {DType::kFp16}},
    {"fp32", {kProFp | kExtVariable}, {DType::kFp32}}};
// VARIABLE_READ
constexpr std::span<const ArgDef> kVARIABLE_READ_in{};
constexpr AttrDef kVARIABLE_READ_attr[] = {
    {"name", AttrKind::kString, "", 0}};
constexpr ArgDef kVARIABLE_READ_out[] = {
    {"output1", ArgKind::kTensor, "out_t", "shape", 0, kRankMax}};
constexpr const char* kVARIABLE_READ_vars[] = {"out_t"};
constexpr TypeSupport kVARIABLE_READ_types[] = {
    {"signed 8", {kProInt | kExtVariable}, {DType::kInt8}},
    {"fp16", {kProFp | kExtVariable}, {DType::kFp16}},
    {"fp32", {kProFp | kExtVariable}, {DType::kFp32}}};
// CONST_SHAPE
constexpr std::span<const ArgDef> kCONST_SHAPE_in{};
constexpr AttrDef kCONST_SHAPE_attr[] = {
    {"values", AttrKind::kShapeValues, "", kLenAny}};
constexpr ArgDef kCONST_SHAPE_out[] = {
    {"output", ArgKind::kShape, "", "", kRankAny, kRankAny}};
constexpr std::span<const char* const> kCONST_SHAPE_vars{};
constexpr TypeSupport kCONST_SHAPE_types[] = {
    {"shape", {kProInt, kProFp}, {}}};
// clang-format on

constexpr OpDef kOpDefs[] = {
#define WEFT_OP(NAME, SPIRV_OPCODE, GROUP) \
  {Op::NAME, #NAME, SPIRV_OPCODE, GROUP, k##NAME##_in, k##NAME##_attr, k##NAME##_out, k##NAME##_vars, k##NAME##_types},
#include "weft/op_list.inc"
#undef WEFT_OP
};
static_assert(sizeof(kOpDefs) / sizeof(kOpDefs[0]) == kNumOps);

}  // namespace

std::span<const OpDef> all_op_defs() { return kOpDefs; }
const OpDef& op_def(Op op) { return kOpDefs[static_cast<size_t>(op)]; }

}  // namespace weft
