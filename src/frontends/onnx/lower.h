// The ONNX operators of the default domain that the frontend lowers: the one list, from which
// the lowering declarations and the dispatch table (lower_table.cpp) are generated. Each entry
// X(OpType) has a function lower_<OpType> in one of lower_*.cpp.
#pragma once

namespace onnx {
class NodeProto;
}

#define WEFT_ONNX_OPS(X)                                                                                   \
  X(Abs) X(Add) X(And) X(ArgMax) X(ArgMin) X(AveragePool) X(BatchNormalization) X(Cast) X(Ceil) X(Clip)    \
  X(Concat) X(Constant) X(ConstantOfShape) X(Conv) X(ConvTranspose) X(Cos) X(DepthToSpace)                 \
  X(DequantizeLinear) X(Div) X(Dropout) X(Elu) X(Equal) X(Erf) X(Exp) X(Expand) X(Flatten) X(Floor)        \
  X(Gather) X(Gelu) X(Gemm) X(GlobalAveragePool) X(GlobalMaxPool) X(Greater) X(GreaterOrEqual)             \
  X(HardSigmoid) X(HardSwish) X(Identity) X(InstanceNormalization) X(LayerNormalization) X(LeakyRelu)      \
  X(Less) X(LessOrEqual) X(Log) X(LogSoftmax) X(MatMul) X(Max) X(MaxPool) X(Mean) X(Min) X(Mish) X(Mul)     \
  X(Neg)                                                                                                   \
  X(Not) X(Or) X(PRelu) X(Pad) X(Pow) X(QLinearConv) X(QLinearMatMul) X(QuantizeLinear) X(Range)          \
  X(Reciprocal) X(ReduceL1) X(ReduceL2) X(ReduceLogSum) X(ReduceLogSumExp) X(ReduceMax) X(ReduceMean)      \
  X(ReduceMin) X(ReduceProd) X(ReduceSum) X(ReduceSumSquare) X(Relu) X(Reshape) X(Resize) X(Shape)         \
  X(Sigmoid) X(Sign) X(Sin) X(Size) X(Slice) X(Softmax) X(Softplus) X(Softsign) X(SpaceToDepth) X(Split)   \
  X(Sqrt) X(Squeeze) X(Sub) X(Sum) X(Tanh) X(Tile) X(Transpose) X(Unsqueeze) X(Upsample) X(Where) X(Xor)       \
  X(CastLike) X(Celu) X(Cosh) X(EyeLike) X(GatherElements) X(IsInf) X(IsNaN) X(MeanVarianceNormalization)   \
  X(Mod) X(Sinh) X(Tan) X(ThresholdedRelu) X(Trilu) X(Hardmax)    \
  X(NegativeLogLikelihoodLoss) X(SoftmaxCrossEntropyLoss) X(RNN) X(GRU) X(LSTM)    \
  X(GatherND) X(ScatterND) X(ScatterElements) X(Scatter)    \
  X(Selu) X(Shrink) X(Round) X(CumSum) X(OneHot) X(LRN) X(TopK)    \
  X(Atan) X(Asin) X(Acos) X(Asinh) X(Acosh) X(Atanh) X(BitShift) X(ConvInteger) X(MatMulInteger)    \
  X(DynamicQuantizeLinear) X(GridSample)    \
  X(HannWindow) X(HammingWindow) X(BlackmanWindow) X(DFT) X(STFT) X(MelWeightMatrix) X(MaxUnpool)    \
  X(If) X(Loop) X(Scan) X(Einsum) X(Compress) X(ReverseSequence) X(Det) X(RoiAlign)

namespace weft::onnxfe {
class Importer;
#define WEFT_DECLARE_LOWER(NAME) void lower_##NAME(Importer& imp, const onnx::NodeProto& node);
WEFT_ONNX_OPS(WEFT_DECLARE_LOWER)
#undef WEFT_DECLARE_LOWER
}  // namespace weft::onnxfe
