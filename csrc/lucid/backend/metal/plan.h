#pragma once
// A lowering plan: the MPSGraph operations a primitive (or a whole compiled
// step) becomes, as plain data. Every decision of the Metal backend that is
// not an Objective-C call lives in plans and in the code that builds them
// (lower.h, step_plan.h), which compile on every platform; mps_ops.mm turns a
// plan into MPSGraph calls one node at a time, and the reference interpreter
// (interpreter.h) runs a plan on the host so the CPU suite tests it.
//
// Values carry the static shape and dtype MPSGraph infers for them, computed
// here by the documented rules (docs/metal.md lists them with their pages).
// Shapes are MPSGraph shapes: a 0-d tensor is [1] (the same bytes, and [1]
// broadcasts like a scalar). Building a node checks its operands (matching
// dtypes, broadcastable shapes, valid axes), so a plan that MPSGraph would
// reject fails here, on every platform, with a message naming the node.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/core/dtype.h"
#include "lucid/core/shape.h"

namespace lucid::metal {

// One enumerator per MPSGraph call the backend makes, with its selector.
#define LUCID_MPS_OPS(X)                                                                               \
  X(Placeholder, "placeholderWithShape:dataType:name:")                                                \
  X(Constant, "constantWithScalar:shape:dataType:")                                                    \
  X(ConstantData, "constantWithData:shape:dataType:")                                                  \
  X(Cast, "castTensor:toType:name:")                                                                   \
  X(Identity, "identityWithTensor:name:")                                                              \
  X(Exp, "exponentWithTensor:name:")                                                                   \
  X(Log, "logarithmWithTensor:name:")                                                                  \
  X(Sqrt, "squareRootWithTensor:name:")                                                                \
  X(Abs, "absoluteWithTensor:name:")                                                                   \
  X(Neg, "negativeWithTensor:name:")                                                                   \
  X(Sin, "sinWithTensor:name:")                                                                        \
  X(Cos, "cosWithTensor:name:")                                                                        \
  X(Tanh, "tanhWithTensor:name:")                                                                      \
  X(Erf, "erfWithTensor:name:")                                                                        \
  X(Floor, "floorWithTensor:name:")                                                                    \
  X(Ceil, "ceilWithTensor:name:")                                                                      \
  X(Rint, "rintWithTensor:name:")                                                                      \
  X(Trunc, "truncateWithTensor:name:")                                                                 \
  X(Not, "notWithTensor:name:")                                                                        \
  X(IsNaN, "isNaNWithTensor:name:")                                                                    \
  X(IsInf, "isInfiniteWithTensor:name:")                                                               \
  X(IsFinite, "isFiniteWithTensor:name:")                                                              \
  X(SignBit, "signbitWithTensor:name:")                                                                \
  X(Add, "additionWithPrimaryTensor:secondaryTensor:name:")                                            \
  X(Sub, "subtractionWithPrimaryTensor:secondaryTensor:name:")                                         \
  X(Mul, "multiplicationWithPrimaryTensor:secondaryTensor:name:")                                      \
  X(Div, "divisionWithPrimaryTensor:secondaryTensor:name:")                                            \
  X(Mod, "moduloWithPrimaryTensor:secondaryTensor:name:")                                              \
  X(FloorMod, "floorModuloWithPrimaryTensor:secondaryTensor:name:")                                    \
  X(Pow, "powerWithPrimaryTensor:secondaryTensor:name:")                                               \
  X(Min, "minimumWithPrimaryTensor:secondaryTensor:name:")                                             \
  X(Max, "maximumWithPrimaryTensor:secondaryTensor:name:")                                             \
  X(MinNaN, "minimumWithNaNPropagationWithPrimaryTensor:secondaryTensor:name:")                        \
  X(MaxNaN, "maximumWithNaNPropagationWithPrimaryTensor:secondaryTensor:name:")                        \
  X(Atan2, "atan2WithPrimaryTensor:secondaryTensor:name:")                                             \
  X(Eq, "equalWithPrimaryTensor:secondaryTensor:name:")                                                \
  X(Ne, "notEqualWithPrimaryTensor:secondaryTensor:name:")                                             \
  X(Lt, "lessThanWithPrimaryTensor:secondaryTensor:name:")                                             \
  X(Le, "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:")                                    \
  X(Gt, "greaterThanWithPrimaryTensor:secondaryTensor:name:")                                          \
  X(Ge, "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:")                                 \
  X(And, "logicalANDWithPrimaryTensor:secondaryTensor:name:")                                          \
  X(Or, "logicalORWithPrimaryTensor:secondaryTensor:name:")                                            \
  X(Xor, "logicalXORWithPrimaryTensor:secondaryTensor:name:")                                          \
  X(BitAnd, "bitwiseANDWithPrimaryTensor:secondaryTensor:name:")                                       \
  X(ShiftRight, "bitwiseRightShiftWithPrimaryTensor:secondaryTensor:name:")                            \
  X(Select, "selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:")                \
  X(ReduceSum, "reductionSumWithTensor:axes:name:")                                                    \
  X(ReduceProd, "reductionProductWithTensor:axes:name:")                                               \
  X(ReduceMax, "reductionMaximumWithTensor:axes:name:")                                                \
  X(ReduceMin, "reductionMinimumWithTensor:axes:name:")                                                \
  X(ReduceMaxNaN, "reductionMaximumPropagateNaNWithTensor:axes:name:")                                 \
  X(ReduceMinNaN, "reductionMinimumPropagateNaNWithTensor:axes:name:")                                 \
  X(ReduceAnd, "reductionAndWithTensor:axes:name:")                                                    \
  X(ReduceOr, "reductionOrWithTensor:axes:name:")                                                      \
  X(Mean, "meanOfTensor:axes:name:")                                                                   \
  X(MatMul, "matrixMultiplicationWithPrimaryTensor:secondaryTensor:name:")                             \
  X(Reshape, "reshapeTensor:withShape:name:")                                                          \
  X(Broadcast, "broadcastTensor:toShape:name:")                                                        \
  X(Transpose, "transposeTensor:dimension:withDimension:name:")                                        \
  X(Permute, "transposeTensor:permutation:name:")                                                      \
  X(Slice, "sliceTensor:starts:ends:strides:name:")                                                    \
  X(ShapeOf, "shapeOfTensor:name:")                                                                    \
  X(SliceGradient, "sliceGradientTensor:fwdInShapeTensor:starts:ends:strides:name:")                   \
  X(Concat, "concatTensors:dimension:name:")                                                           \
  X(Pad, "padTensor:withPaddingMode:leftPadding:rightPadding:constantValue:name:")                     \
  X(Gather, "gatherWithUpdatesTensor:indicesTensor:axis:batchDimensions:name:")                        \
  X(GatherAlongAxis, "gatherAlongAxis:withUpdatesTensor:indicesTensor:name:")                          \
  X(Scatter, "scatterWithDataTensor:updatesTensor:indicesTensor:axis:mode:name:")                      \
  X(ScatterAlongAxis, "scatterAlongAxis:withDataTensor:updatesTensor:indicesTensor:mode:name:")        \
  X(ScatterAlongAxisInto, "scatterAlongAxis:withUpdatesTensor:indicesTensor:shape:mode:name:")         \
  X(MaxPool2dWithIndices, "maxPooling2DReturnIndicesWithSourceTensor:descriptor:name:")                \
  X(MaxPool2dGradient, "maxPooling2DGradientWithGradientTensor:indicesTensor:outputShape:descriptor:name:")        \
  X(Conv2d, "convolution2DWithSourceTensor:weightsTensor:descriptor:name:")                                        \
  X(Conv2dDataGradient, "convolution2DDataGradientWithIncomingGradientTensor:weightsTensor:outputShape:forwardConvolutionDescriptor:name:") \
  X(Conv2dWeightsGradient, "convolution2DWeightsGradientWithIncomingGradientTensor:sourceTensor:outputShape:forwardConvolutionDescriptor:name:")

enum class MpsOp : uint8_t {
#define LUCID_MPS_OP_ENUM(name, selector) name,
  LUCID_MPS_OPS(LUCID_MPS_OP_ENUM)
#undef LUCID_MPS_OP_ENUM
      Count
};
const char* mps_op_name(MpsOp op);      // "Add"
const char* mps_op_selector(MpsOp op);  // "additionWithPrimaryTensor:secondaryTensor:name:"

enum class ScatterMode : uint8_t { Add, Set };

// A 2-D window over NCHW, as MPSGraphPooling2DOpDescriptor (indices
// returned flattened over H*W, as int32) and
// MPSGraphConvolution2DOpDescriptor (weights OIHW, with `groups`) take it.
struct PoolWindow {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;
};

struct PlanValue {
  DType dtype = DType::Float32;
  Shape shape;  // static, rank >= 1
};

// One MPSGraph call. Which attributes an op reads is stated where the
// builder makes it (PlanBuilder below).
struct PlanNode {
  MpsOp op = MpsOp::Identity;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids (two for MaxPool2dWithIndices)
  std::vector<int64_t> a, b, c;
  int64_t axis = 0, axis2 = 0;
  double scalar = 0;
  ScatterMode mode = ScatterMode::Add;
  PoolWindow window;
  std::vector<unsigned char> bytes;
};

struct Plan {
  std::vector<PlanValue> values;
  std::vector<PlanNode> nodes;   // in a valid execution order
  std::vector<int> inputs;       // placeholder values, in the order the caller binds them
  std::vector<int> targets;      // result values, distinct, none a placeholder

  // Every node, attribute, constant byte, shape and dtype, and the inputs and
  // targets: two plans with equal keys build the same MPSGraph.
  std::string key() const;
  std::string dump() const;  // one line per node, for errors and tests
};

// Builds a plan node by node, computing each result's shape and dtype by
// MPSGraph's rules and rejecting operands MPSGraph would reject.
class PlanBuilder {
 public:
  using V = int;  // a value id; -1 means "no tensor" (an input with no elements)

  explicit PlanBuilder(Plan& plan) : p_(plan) {}
  Plan& plan() { return p_; }
  const PlanValue& value(V v) const;
  DType dtype(V v) const { return value(v).dtype; }
  const Shape& shape(V v) const { return value(v).shape; }

  // Inputs and results.
  V placeholder(DType t, const Shape& shape);  // appended to plan.inputs
  void target(V v);                            // appended to plan.targets (an identity first when needed)

  // Constants.
  V scalar(double v, DType t);                       // shape [1]
  V like(double v, V x) { return scalar(v, dtype(x)); }
  V full(double v, DType t, const Shape& shape);     // constantWithScalar over `shape`
  V data(const void* bytes, size_t nbytes, const Shape& shape, DType t);

  V cast(V x, DType t);  // x itself when it already has dtype t
  V identity(V x);

  // Elementwise: operands of one dtype, broadcast from the trailing dims.
  V unary(MpsOp op, V x);
  V binary(MpsOp op, V a, V b);
  V select(V cond, V a, V b);  // cond is bool
  V add(V a, V b) { return binary(MpsOp::Add, a, b); }
  V sub(V a, V b) { return binary(MpsOp::Sub, a, b); }
  V mul(V a, V b) { return binary(MpsOp::Mul, a, b); }
  V div(V a, V b) { return binary(MpsOp::Div, a, b); }
  V eq(V a, V b) { return binary(MpsOp::Eq, a, b); }
  V ne(V a, V b) { return binary(MpsOp::Ne, a, b); }
  V lt(V a, V b) { return binary(MpsOp::Lt, a, b); }
  V gt(V a, V b) { return binary(MpsOp::Gt, a, b); }
  V land(V a, V b) { return binary(MpsOp::And, a, b); }
  V lor(V a, V b) { return binary(MpsOp::Or, a, b); }
  V lxor(V a, V b) { return binary(MpsOp::Xor, a, b); }
  V lnot(V x) { return unary(MpsOp::Not, x); }

  // Reductions over `axes` (a); the result keeps the reduced axes with
  // extent 1. A reshape to that shape follows each reduction, so the plan
  // means the same whether or not MPSGraph keeps them.
  V reduce(MpsOp op, V x, const std::vector<int64_t>& axes);

  // [..., M, K] x [..., K, N] with equal batch dims.
  V matmul(V a, V b);

  V reshape(V x, const Shape& shape);        // a = shape
  V broadcast(V x, const Shape& shape);      // a = shape
  V transpose(V x, int64_t d0, int64_t d1);  // axis, axis2
  V permute(V x, const std::vector<int64_t>& perm);  // a = perm: result dim i is x's dim perm[i]
  // a, b, c = starts, ends, strides (positive), one per dim.
  V slice(V x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
          const std::vector<int64_t>& strides);
  V shape_of(V x);  // int32 [rank]
  // `grad` placed at the slice of a zero tensor of the shape `shape_tensor`
  // holds (which must come from shape_of); a, b, c as slice().
  V slice_gradient(V grad, V shape_tensor, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   const std::vector<int64_t>& strides);
  V concat(const std::vector<V>& parts, int64_t axis);
  V pad(V x, const std::vector<int64_t>& left, const std::vector<int64_t>& right, double value);  // constant mode

  // updates.shape[:axis] + indices.shape + updates.shape[axis+1:], no batch dims.
  V gather(V updates, V indices, int64_t axis);
  // result[..., i, ...] = updates[..., indices[..., i, ...], ...] along axis;
  // indices has updates' extent in every other dim.
  V gather_along_axis(V updates, V indices, int64_t axis);
  // data with updates written or added at `indices` along `axis` (1-D only here).
  V scatter(V data, V updates, V indices, int64_t axis, ScatterMode mode);
  // data with updates[p] written/added at p with its `axis` coordinate
  // replaced by indices[p]; out-of-range positions are skipped.
  V scatter_along_axis(V data, V updates, V indices, int64_t axis, ScatterMode mode);
  V scatter_along_axis_into(const Shape& shape, DType t, V updates, V indices, int64_t axis, ScatterMode mode);

  // NCHW max pooling: (values, int32 indices flattened over H*W).
  std::pair<V, V> max_pool2d_with_indices(V x, const PoolWindow& w);
  V max_pool2d_gradient(V grad, V indices, const Shape& out_shape, const PoolWindow& w);

  // NCHW convolution with OIHW weights (w.groups groups), floating operands
  // of one dtype; its gradients for the source (shape `a` = the source's)
  // and for the weights (`a` = the weights' shape).
  V conv2d(V x, V weights, const PoolWindow& w);
  V conv2d_data_gradient(V grad, V weights, const Shape& source_shape, const PoolWindow& w);
  V conv2d_weights_gradient(V grad, V source, const Shape& weights_shape, const PoolWindow& w);

  // `x` in exactly `shape` (0-d as [1]): reshaped when the element count
  // matches, broadcast otherwise.
  V fit(V x, const Shape& shape);

 private:
  V add_value(DType t, Shape shape);
  PlanNode& add_node(MpsOp op, std::vector<int> inputs, std::vector<V> outputs);
  V op1(MpsOp op, std::vector<int> inputs, DType t, Shape shape);
  Plan& p_;
};

// A tensor shape as MPSGraph sees it: 0-d tensors are [1].
Shape graph_shape(const Shape& s);

}  // namespace lucid::metal
