// A plan as MPSGraph calls, one per node. Every decision (which operations,
// axes, casts, shapes, constants) was made by the portable lowering
// (lower.cpp, step_plan.cpp); this file only spells each plan operation as
// its MPSGraph selector (plan.h lists them side by side).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/mps_ops.h"

namespace lucid::metal {

namespace {

NSArray<NSNumber*>* numbers(const std::vector<int64_t>& v) {
  NSMutableArray<NSNumber*>* a = [NSMutableArray arrayWithCapacity:v.size()];
  for (int64_t x : v) [a addObject:@((long long)x)];
  return a;
}

MPSGraphScatterMode scatter_mode(ScatterMode m) {
  return m == ScatterMode::Add ? MPSGraphScatterModeAdd : MPSGraphScatterModeSet;
}

// Indices flattened over H*W of the input, as int32 (what the plan expects).
MPSGraphPooling2DOpDescriptor* pool_descriptor(const PoolWindow& w) {
  MPSGraphPooling2DOpDescriptor* d =
      [MPSGraphPooling2DOpDescriptor descriptorWithKernelWidth:NSUInteger(w.kw)
                                                  kernelHeight:NSUInteger(w.kh)
                                                     strideInX:NSUInteger(w.sw)
                                                     strideInY:NSUInteger(w.sh)
                                               dilationRateInX:NSUInteger(w.dw)
                                               dilationRateInY:NSUInteger(w.dh)
                                                   paddingLeft:NSUInteger(w.pad_left)
                                                  paddingRight:NSUInteger(w.pad_right)
                                                    paddingTop:NSUInteger(w.pad_top)
                                                 paddingBottom:NSUInteger(w.pad_bottom)
                                                  paddingStyle:MPSGraphPaddingStyleExplicit
                                                    dataLayout:MPSGraphTensorNamedDataLayoutNCHW];
  if (d == nil) fail<Error>("metal: MPSGraph rejected the pooling window");
  d.returnIndicesMode = MPSGraphPoolingReturnIndicesGlobalFlatten2D;
  d.returnIndicesDataType = MPSDataTypeInt32;
  return d;
}

// NCHW source, OIHW weights, explicit per-side padding.
MPSGraphConvolution2DOpDescriptor* conv_descriptor(const PoolWindow& w) {
  MPSGraphConvolution2DOpDescriptor* d =
      [MPSGraphConvolution2DOpDescriptor descriptorWithStrideInX:NSUInteger(w.sw)
                                                       strideInY:NSUInteger(w.sh)
                                                 dilationRateInX:NSUInteger(w.dw)
                                                 dilationRateInY:NSUInteger(w.dh)
                                                          groups:NSUInteger(w.groups)
                                                     paddingLeft:NSUInteger(w.pad_left)
                                                    paddingRight:NSUInteger(w.pad_right)
                                                      paddingTop:NSUInteger(w.pad_top)
                                                   paddingBottom:NSUInteger(w.pad_bottom)
                                                    paddingStyle:MPSGraphPaddingStyleExplicit
                                                      dataLayout:MPSGraphTensorNamedDataLayoutNCHW
                                                   weightsLayout:MPSGraphTensorNamedDataLayoutOIHW];
  if (d == nil) fail<Error>("metal: MPSGraph rejected the convolution window");
  return d;
}

}  // namespace

BuiltGraph build_graph(const Plan& plan, const char* what) {
  BuiltGraph out;
  MPSGraph* g = [MPSGraph new];
  out.graph = g;
  std::vector<MPSGraphTensor*> t(plan.values.size(), nil);
  for (const PlanNode& n : plan.nodes) {
    auto in = [&](size_t k) { return t[size_t(n.inputs[k])]; };
    const PlanValue& v = plan.values[size_t(n.outputs[0])];
    MPSGraphTensor* r = nil;
    switch (n.op) {
      case MpsOp::Placeholder:
        r = [g placeholderWithShape:mps_shape(v.shape) dataType:mps_dtype(v.dtype, what) name:nil];
        break;
      case MpsOp::Constant:
        r = [g constantWithScalar:n.scalar shape:numbers(n.a) dataType:mps_dtype(v.dtype, what)];
        break;
      case MpsOp::ConstantData:
        r = [g constantWithData:[NSData dataWithBytes:n.bytes.data() length:n.bytes.size()]
                          shape:numbers(n.a)
                       dataType:mps_dtype(v.dtype, what)];
        break;
      case MpsOp::Cast: r = [g castTensor:in(0) toType:mps_dtype(v.dtype, what) name:nil]; break;
      case MpsOp::Identity: r = [g identityWithTensor:in(0) name:nil]; break;
      case MpsOp::Exp: r = [g exponentWithTensor:in(0) name:nil]; break;
      case MpsOp::Log: r = [g logarithmWithTensor:in(0) name:nil]; break;
      case MpsOp::Sqrt: r = [g squareRootWithTensor:in(0) name:nil]; break;
      case MpsOp::Abs: r = [g absoluteWithTensor:in(0) name:nil]; break;
      case MpsOp::Neg: r = [g negativeWithTensor:in(0) name:nil]; break;
      case MpsOp::Sin: r = [g sinWithTensor:in(0) name:nil]; break;
      case MpsOp::Cos: r = [g cosWithTensor:in(0) name:nil]; break;
      case MpsOp::Tanh: r = [g tanhWithTensor:in(0) name:nil]; break;
      case MpsOp::Erf: r = [g erfWithTensor:in(0) name:nil]; break;
      case MpsOp::Floor: r = [g floorWithTensor:in(0) name:nil]; break;
      case MpsOp::Ceil: r = [g ceilWithTensor:in(0) name:nil]; break;
      case MpsOp::Rint: r = [g rintWithTensor:in(0) name:nil]; break;
      case MpsOp::Trunc: r = [g truncateWithTensor:in(0) name:nil]; break;
      case MpsOp::Not: r = [g notWithTensor:in(0) name:nil]; break;
      case MpsOp::IsNaN: r = [g isNaNWithTensor:in(0) name:nil]; break;
      case MpsOp::IsInf: r = [g isInfiniteWithTensor:in(0) name:nil]; break;
      case MpsOp::IsFinite: r = [g isFiniteWithTensor:in(0) name:nil]; break;
      case MpsOp::SignBit: r = [g signbitWithTensor:in(0) name:nil]; break;
      case MpsOp::Add: r = [g additionWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Sub: r = [g subtractionWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Mul: r = [g multiplicationWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Div: r = [g divisionWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Mod: r = [g moduloWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::FloorMod: r = [g floorModuloWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Pow: r = [g powerWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Min: r = [g minimumWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Max: r = [g maximumWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::MinNaN:
        r = [g minimumWithNaNPropagationWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil];
        break;
      case MpsOp::MaxNaN:
        r = [g maximumWithNaNPropagationWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil];
        break;
      case MpsOp::Atan2: r = [g atan2WithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Eq: r = [g equalWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Ne: r = [g notEqualWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Lt: r = [g lessThanWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Le: r = [g lessThanOrEqualToWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Gt: r = [g greaterThanWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Ge: r = [g greaterThanOrEqualToWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::And: r = [g logicalANDWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Or: r = [g logicalORWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Xor: r = [g logicalXORWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::BitAnd: r = [g bitwiseANDWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::ShiftRight: r = [g bitwiseRightShiftWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Select:
        r = [g selectWithPredicateTensor:in(0) truePredicateTensor:in(1) falsePredicateTensor:in(2) name:nil];
        break;
      case MpsOp::ReduceSum: r = [g reductionSumWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceProd: r = [g reductionProductWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceMax: r = [g reductionMaximumWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceMin: r = [g reductionMinimumWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceMaxNaN: r = [g reductionMaximumPropagateNaNWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceMinNaN: r = [g reductionMinimumPropagateNaNWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceAnd: r = [g reductionAndWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::ReduceOr: r = [g reductionOrWithTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::Mean: r = [g meanOfTensor:in(0) axes:numbers(n.a) name:nil]; break;
      case MpsOp::MatMul: r = [g matrixMultiplicationWithPrimaryTensor:in(0) secondaryTensor:in(1) name:nil]; break;
      case MpsOp::Reshape: r = [g reshapeTensor:in(0) withShape:numbers(n.a) name:nil]; break;
      case MpsOp::Broadcast: r = [g broadcastTensor:in(0) toShape:numbers(n.a) name:nil]; break;
      case MpsOp::Transpose:
        r = [g transposeTensor:in(0) dimension:NSUInteger(n.axis) withDimension:NSUInteger(n.axis2) name:nil];
        break;
      case MpsOp::Permute: r = [g transposeTensor:in(0) permutation:numbers(n.a) name:nil]; break;
      case MpsOp::Slice:
        r = [g sliceTensor:in(0) starts:numbers(n.a) ends:numbers(n.b) strides:numbers(n.c) name:nil];
        break;
      case MpsOp::ShapeOf: r = [g shapeOfTensor:in(0) name:nil]; break;
      case MpsOp::SliceGradient:
        r = [g sliceGradientTensor:in(0)
                  fwdInShapeTensor:in(1)
                            starts:numbers(n.a)
                              ends:numbers(n.b)
                           strides:numbers(n.c)
                              name:nil];
        break;
      case MpsOp::Concat: {
        NSMutableArray<MPSGraphTensor*>* parts = [NSMutableArray arrayWithCapacity:n.inputs.size()];
        for (int i : n.inputs) [parts addObject:t[size_t(i)]];
        r = [g concatTensors:parts dimension:NSInteger(n.axis) name:nil];
        break;
      }
      case MpsOp::Pad:
        r = [g padTensor:in(0)
            withPaddingMode:MPSGraphPaddingModeConstant
                leftPadding:numbers(n.a)
               rightPadding:numbers(n.b)
              constantValue:n.scalar
                       name:nil];
        break;
      case MpsOp::Gather:
        r = [g gatherWithUpdatesTensor:in(0) indicesTensor:in(1) axis:NSUInteger(n.axis) batchDimensions:0 name:nil];
        break;
      case MpsOp::GatherAlongAxis:
        r = [g gatherAlongAxis:NSInteger(n.axis) withUpdatesTensor:in(0) indicesTensor:in(1) name:nil];
        break;
      case MpsOp::Scatter:
        r = [g scatterWithDataTensor:in(0)
                       updatesTensor:in(1)
                       indicesTensor:in(2)
                                axis:NSInteger(n.axis)
                                mode:scatter_mode(n.mode)
                                name:nil];
        break;
      case MpsOp::ScatterAlongAxis:
        r = [g scatterAlongAxis:NSInteger(n.axis)
                 withDataTensor:in(0)
                  updatesTensor:in(1)
                  indicesTensor:in(2)
                           mode:scatter_mode(n.mode)
                           name:nil];
        break;
      case MpsOp::ScatterAlongAxisInto:
        r = [g scatterAlongAxis:NSInteger(n.axis)
              withUpdatesTensor:in(0)
                  indicesTensor:in(1)
                          shape:numbers(n.a)
                           mode:scatter_mode(n.mode)
                           name:nil];
        break;
      case MpsOp::MaxPool2dWithIndices: {
        NSArray<MPSGraphTensor*>* res = [g maxPooling2DReturnIndicesWithSourceTensor:in(0)
                                                                          descriptor:pool_descriptor(n.window)
                                                                                name:nil];
        t[size_t(n.outputs[1])] = res[1];
        r = res[0];
        break;
      }
      case MpsOp::MaxPool2dGradient:
        r = [g maxPooling2DGradientWithGradientTensor:in(0)
                                        indicesTensor:in(1)
                                          outputShape:numbers(n.a)
                                           descriptor:pool_descriptor(n.window)
                                                 name:nil];
        break;
      case MpsOp::Conv2d:
        r = [g convolution2DWithSourceTensor:in(0) weightsTensor:in(1) descriptor:conv_descriptor(n.window) name:nil];
        break;
      case MpsOp::Conv2dDataGradient:
        r = [g convolution2DDataGradientWithIncomingGradientTensor:in(0)
                                                     weightsTensor:in(1)
                                                       outputShape:numbers(n.a)
                                      forwardConvolutionDescriptor:conv_descriptor(n.window)
                                                              name:nil];
        break;
      case MpsOp::Conv2dWeightsGradient:
        r = [g convolution2DWeightsGradientWithIncomingGradientTensor:in(0)
                                                         sourceTensor:in(1)
                                                          outputShape:numbers(n.a)
                                         forwardConvolutionDescriptor:conv_descriptor(n.window)
                                                                 name:nil];
        break;
      case MpsOp::Count: fail<Error>("metal: invalid plan operation");
    }
    t[size_t(n.outputs[0])] = r;
  }
  for (int v : plan.inputs) out.inputs.push_back(t[size_t(v)]);
  for (int v : plan.targets) out.targets.push_back(t[size_t(v)]);
  return out;
}

}  // namespace lucid::metal
