// The MetalPerformanceShadersGraph API the backend uses (see
// ../lucid_apple_doc.h for the markers). Pages are relative to
// https://developer.apple.com/documentation/ and name the Swift form of each method; the Objective-C selector is the page's
// "preciseIdentifier" (c:objc(cs)MPSGraph(im)<selector>). Swift `Int` is
// NSInteger or NSUInteger in Objective-C; the pages do not say which, so the
// signedness follows Microsoft's .NET bindings (nint/IntPtr = NSInteger)
// where they were read, NSUInteger otherwise.
#pragma once
#include "Foundation/Foundation.h"
#include "Metal/Metal.h"
#include "MetalPerformanceShaders/MetalPerformanceShaders.h"

#pragma clang assume_nonnull begin

// --------------------------------------------------------------- classes
LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphobject")
@interface MPSGraphObject : NSObject
@end

LUCID_DOC_STRUCTURAL(12.0, "metalperformanceshadersgraph/mpsgraphtype")
@interface MPSGraphType : MPSGraphObject
@end

LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphshapedtype")
@interface MPSGraphShapedType : MPSGraphType
- (instancetype)initWithShape:(nullable MPSShape*)shape
                     dataType:(MPSDataType)dataType LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphshapedtype/init(shape:datatype:)");
@end

LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphdevice")
@interface MPSGraphDevice : MPSGraphObject
+ (instancetype)deviceWithMTLDevice:(id<MTLDevice>)metalDevice LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphdevice/init(mtldevice:)-4ettd");
@end

LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphoperation")
@interface MPSGraphOperation : MPSGraphObject <NSCopying>
@end

// Tensors are dictionary keys (feeds), hence NSCopying.
LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphtensor")
@interface MPSGraphTensor : MPSGraphObject <NSCopying>
@property(nullable, readonly, copy) MPSShape* shape LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphtensor/shape");
@property(readonly) MPSDataType dataType LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphtensor/datatype");
@end

LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphtensordata")
@interface MPSGraphTensorData : MPSGraphObject
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer
                            shape:(MPSShape*)shape
                         dataType:(MPSDataType)dataType LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphtensordata/init(_:shape:datatype:)");
@end

LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraphcompilationdescriptor")
@interface MPSGraphCompilationDescriptor : MPSGraphObject
@end

LUCID_DOC_STRUCTURAL(12.0, "metalperformanceshadersgraph/mpsgraphexecutableexecutiondescriptor")
@interface MPSGraphExecutableExecutionDescriptor : MPSGraphObject
@end

typedef NSDictionary<MPSGraphTensor*, MPSGraphShapedType*> MPSGraphTensorShapedTypeDictionary
    LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphtensorshapedtypedictionary");

LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraphexecutable")
@interface MPSGraphExecutable : MPSGraphObject
@property(nullable, readonly) NSArray<MPSGraphTensor*>* feedTensors LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraphexecutable/feedtensors");
@property(nullable, readonly) NSArray<MPSGraphTensor*>* targetTensors
    LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraphexecutable/targettensors");
// The command buffer may be committed and continued by the call
// (commitAndContinue); inputs follow feedTensors' order.
- (NSArray<MPSGraphTensorData*>*)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer
                                           inputsArray:(NSArray<MPSGraphTensorData*>*)inputsArray
                                          resultsArray:(nullable NSArray<MPSGraphTensorData*>*)resultsArray
                                   executionDescriptor:(nullable MPSGraphExecutableExecutionDescriptor*)executionDescriptor
    LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraphexecutable/encode(to:inputs:results:executiondescriptor:)");
@end

// ----------------------------------------------------------------- enums
// Enumerator values are not something this check can verify; they are left
// implicit and the backend never relies on them.
enum MPSGraphScatterMode : NSInteger {
  MPSGraphScatterModeAdd LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraphscattermode/add"),
  MPSGraphScatterModeSet LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraphscattermode/set"),
};
typedef enum MPSGraphScatterMode MPSGraphScatterMode LUCID_DOC_STRUCTURAL(12.0, "metalperformanceshadersgraph/mpsgraphscattermode");

enum MPSGraphPaddingMode : NSInteger {
  MPSGraphPaddingModeConstant LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphpaddingmode/constant"),
};
typedef enum MPSGraphPaddingMode MPSGraphPaddingMode LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphpaddingmode");

enum MPSGraphPaddingStyle : NSUInteger {
  MPSGraphPaddingStyleExplicit LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphpaddingstyle/explicit"),
};
typedef enum MPSGraphPaddingStyle MPSGraphPaddingStyle LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphpaddingstyle");

// The values follow the objc2 crate's reference (NCHW, NHWC, OIHW, ... in order).
enum MPSGraphTensorNamedDataLayout : NSUInteger {
  MPSGraphTensorNamedDataLayoutNCHW LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphtensornameddatalayout/nchw"),
  MPSGraphTensorNamedDataLayoutOIHW LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphtensornameddatalayout/oihw") = 2,
};
typedef enum MPSGraphTensorNamedDataLayout MPSGraphTensorNamedDataLayout
    LUCID_DOC_STRUCTURAL(11.0, "metalperformanceshadersgraph/mpsgraphtensornameddatalayout");

// NSUInteger per the objc2 crate's reference, which also gives the value.
enum MPSGraphPoolingReturnIndicesMode : NSUInteger {
  MPSGraphPoolingReturnIndicesGlobalFlatten2D
      LUCID_DOC_FAMILY(12.2, "metalperformanceshadersgraph/mpsgraphpoolingreturnindicesmode/globalflatten2d") = 2,
};
typedef enum MPSGraphPoolingReturnIndicesMode MPSGraphPoolingReturnIndicesMode
    LUCID_DOC_STRUCTURAL(12.2, "metalperformanceshadersgraph/mpsgraphpoolingreturnindicesmode");

LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphpooling2dopdescriptor")
@interface MPSGraphPooling2DOpDescriptor : MPSGraphObject
+ (nullable instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth
                                      kernelHeight:(NSUInteger)kernelHeight
                                         strideInX:(NSUInteger)strideInX
                                         strideInY:(NSUInteger)strideInY
                                   dilationRateInX:(NSUInteger)dilationRateInX
                                   dilationRateInY:(NSUInteger)dilationRateInY
                                       paddingLeft:(NSUInteger)paddingLeft
                                      paddingRight:(NSUInteger)paddingRight
                                        paddingTop:(NSUInteger)paddingTop
                                     paddingBottom:(NSUInteger)paddingBottom
                                      paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                                        dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraphpooling2dopdescriptor/init(kernelwidth:kernelheight:strideinx:strideiny:"
                           "dilationrateinx:dilationrateiny:paddingleft:paddingright:paddingtop:paddingbottom:"
                           "paddingstyle:datalayout:)");
@property(readwrite) MPSGraphPoolingReturnIndicesMode returnIndicesMode
    LUCID_DOC(12.2, "metalperformanceshadersgraph/mpsgraphpooling2dopdescriptor/returnindicesmode");
@property(readwrite) MPSDataType returnIndicesDataType
    LUCID_DOC_FAMILY(12.2, "metalperformanceshadersgraph/mpsgraphpooling2dopdescriptor/returnindicesdatatype");
@end

LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphconvolution2dopdescriptor")
@interface MPSGraphConvolution2DOpDescriptor : MPSGraphObject
+ (nullable instancetype)descriptorWithStrideInX:(NSUInteger)strideInX
                                       strideInY:(NSUInteger)strideInY
                                 dilationRateInX:(NSUInteger)dilationRateInX
                                 dilationRateInY:(NSUInteger)dilationRateInY
                                          groups:(NSUInteger)groups
                                     paddingLeft:(NSUInteger)paddingLeft
                                    paddingRight:(NSUInteger)paddingRight
                                      paddingTop:(NSUInteger)paddingTop
                                   paddingBottom:(NSUInteger)paddingBottom
                                    paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                                      dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                                   weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraphconvolution2dopdescriptor/init(strideinx:strideiny:"
                    "dilationrateinx:dilationrateiny:groups:paddingleft:paddingright:paddingtop:paddingbottom:"
                    "paddingstyle:datalayout:weightslayout:)");
@end

// ----------------------------------------------------------------- graph
LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph")
@interface MPSGraph : MPSGraphObject

// Placeholders, constants, compilation
- (MPSGraphTensor*)placeholderWithShape:(nullable MPSShape*)shape
                               dataType:(MPSDataType)dataType
                                   name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/placeholder(shape:datatype:name:)");
- (MPSGraphTensor*)constantWithScalar:(double)scalar
                                shape:(MPSShape*)shape
                             dataType:(MPSDataType)dataType LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/constant(_:shape:datatype:)");
- (MPSGraphTensor*)constantWithData:(NSData*)data
                              shape:(MPSShape*)shape
                           dataType:(MPSDataType)dataType LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/constant(_:shape:datatype:)-ylr4");
- (MPSGraphExecutable*)compileWithDevice:(nullable MPSGraphDevice*)device
                                   feeds:(MPSGraphTensorShapedTypeDictionary*)feeds
                           targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                        targetOperations:(nullable NSArray<MPSGraphOperation*>*)targetOperations
                   compilationDescriptor:(nullable MPSGraphCompilationDescriptor*)compilationDescriptor
    LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/compile(with:feeds:targettensors:targetoperations:compilationdescriptor:)");

// Unary arithmetic
- (MPSGraphTensor*)identityWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/identity(with:name:)");
- (MPSGraphTensor*)exponentWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/exponent(with:name:)");
- (MPSGraphTensor*)logarithmWithTensor:(MPSGraphTensor*)tensor
                                  name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/logarithm(with:name:)");
- (MPSGraphTensor*)squareRootWithTensor:(MPSGraphTensor*)tensor
                                   name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/squareroot(with:name:)");
- (MPSGraphTensor*)absoluteWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/absolute(with:name:)");
- (MPSGraphTensor*)negativeWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/negative(with:name:)");
- (MPSGraphTensor*)sinWithTensor:(MPSGraphTensor*)tensor
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/sin(with:name:)");
- (MPSGraphTensor*)cosWithTensor:(MPSGraphTensor*)tensor
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/cos(with:name:)");
- (MPSGraphTensor*)tanhWithTensor:(MPSGraphTensor*)tensor
                             name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/tanh(with:name:)");
- (MPSGraphTensor*)erfWithTensor:(MPSGraphTensor*)tensor
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/erf(with:name:)");
- (MPSGraphTensor*)floorWithTensor:(MPSGraphTensor*)tensor
                              name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/floor(with:name:)");
- (MPSGraphTensor*)ceilWithTensor:(MPSGraphTensor*)tensor
                             name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/ceil(with:name:)");
- (MPSGraphTensor*)rintWithTensor:(MPSGraphTensor*)tensor
                             name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/rint(with:name:)");
- (MPSGraphTensor*)truncateWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC(13.0, "metalperformanceshadersgraph/mpsgraph/truncate(_:name:)");
- (MPSGraphTensor*)notWithTensor:(MPSGraphTensor*)tensor
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/not(with:name:)");
- (MPSGraphTensor*)isNaNWithTensor:(MPSGraphTensor*)tensor
                              name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/isnan(with:name:)");
- (MPSGraphTensor*)isInfiniteWithTensor:(MPSGraphTensor*)tensor
                                   name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/isinfinite(with:name:)");
- (MPSGraphTensor*)isFiniteWithTensor:(MPSGraphTensor*)tensor
                                 name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/isfinite(with:name:)");
- (MPSGraphTensor*)signbitWithTensor:(MPSGraphTensor*)tensor
                                name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/signbit(with:name:)");

// Binary arithmetic (broadcasting operands)
- (MPSGraphTensor*)additionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                             secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                        name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/addition(_:_:name:)");
- (MPSGraphTensor*)subtractionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                           name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/subtraction(_:_:name:)");
- (MPSGraphTensor*)multiplicationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                   secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                              name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/multiplication(_:_:name:)");
- (MPSGraphTensor*)divisionWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                             secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                        name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/division(_:_:name:)");
- (MPSGraphTensor*)moduloWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                           secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                      name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/modulo(_:_:name:)");
- (MPSGraphTensor*)floorModuloWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                           name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/floormodulo(_:_:name:)");
- (MPSGraphTensor*)powerWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                          secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                     name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/power(_:_:name:)");
- (MPSGraphTensor*)minimumWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                            secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                       name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/minimum(_:_:name:)");
- (MPSGraphTensor*)maximumWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                            secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                       name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/maximum(_:_:name:)");
- (MPSGraphTensor*)minimumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                              secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                         name:(nullable NSString*)name
    LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/minimumwithnanpropagation(_:_:name:)");
- (MPSGraphTensor*)maximumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                              secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                         name:(nullable NSString*)name
    LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/maximumwithnanpropagation(_:_:name:)");
- (MPSGraphTensor*)atan2WithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                          secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                     name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/atan2(withprimarytensor:secondarytensor:name:)");
- (MPSGraphTensor*)equalWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                          secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                     name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/equal(_:_:name:)");
- (MPSGraphTensor*)notEqualWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                             secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                        name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/notequal(_:_:name:)");
- (MPSGraphTensor*)lessThanWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                             secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                        name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/lessthan(_:_:name:)");
- (MPSGraphTensor*)lessThanOrEqualToWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                      secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                 name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/lessthanorequalto(_:_:name:)");
- (MPSGraphTensor*)greaterThanWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                           name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/greaterthan(_:_:name:)");
- (MPSGraphTensor*)greaterThanOrEqualToWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                         secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                    name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/greaterthanorequalto(_:_:name:)");
- (MPSGraphTensor*)logicalANDWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                               secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                          name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/logicaland(_:_:name:)");
- (MPSGraphTensor*)logicalORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                              secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                         name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/logicalor(_:_:name:)");
- (MPSGraphTensor*)logicalXORWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                               secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                          name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/logicalxor(_:_:name:)");
- (MPSGraphTensor*)bitwiseANDWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                               secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                          name:(nullable NSString*)name LUCID_DOC(13.0, "metalperformanceshadersgraph/mpsgraph/bitwiseand(_:_:name:)");
- (MPSGraphTensor*)bitwiseRightShiftWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                      secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                 name:(nullable NSString*)name
    LUCID_DOC_FAMILY(13.0, "metalperformanceshadersgraph/mpsgraph/bitwiserightshift(_:_:name:)");
- (MPSGraphTensor*)selectWithPredicateTensor:(MPSGraphTensor*)predicateTensor
                         truePredicateTensor:(MPSGraphTensor*)truePredicateTensor
                        falsePredicateTensor:(MPSGraphTensor*)falseSelectTensor
                                        name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/select(predicate:truetensor:falsetensor:name:)");
- (MPSGraphTensor*)castTensor:(MPSGraphTensor*)tensor
                       toType:(MPSDataType)type
                         name:(nullable NSString*)name LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/cast(_:to:name:)");

// Reductions: the reduced axes stay in the result with extent 1.
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor
                                     axes:(nullable NSArray<NSNumber*>*)axes
                                     name:(nullable NSString*)name LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/reductionsum(with:axes:name:)");
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor
                                         axes:(nullable NSArray<NSNumber*>*)axes
                                         name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/reductionproduct(with:axes:name:)");
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor
                                         axes:(nullable NSArray<NSNumber*>*)axes
                                         name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/reductionmaximum(with:axes:name:)");
- (MPSGraphTensor*)reductionMinimumWithTensor:(MPSGraphTensor*)tensor
                                         axes:(nullable NSArray<NSNumber*>*)axes
                                         name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/reductionminimum(with:axes:name:)");
- (MPSGraphTensor*)reductionMaximumPropagateNaNWithTensor:(MPSGraphTensor*)tensor
                                                     axes:(nullable NSArray<NSNumber*>*)axes
                                                     name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/reductionmaximumpropagatenan(with:axes:name:)");
- (MPSGraphTensor*)reductionMinimumPropagateNaNWithTensor:(MPSGraphTensor*)tensor
                                                     axes:(nullable NSArray<NSNumber*>*)axes
                                                     name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/reductionminimumpropagatenan(with:axes:name:)");
- (MPSGraphTensor*)reductionAndWithTensor:(MPSGraphTensor*)tensor
                                     axes:(nullable NSArray<NSNumber*>*)axes
                                     name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/reductionand(with:axes:name:)");
- (MPSGraphTensor*)reductionOrWithTensor:(MPSGraphTensor*)tensor
                                    axes:(nullable NSArray<NSNumber*>*)axes
                                    name:(nullable NSString*)name LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/reductionor(with:axes:name:)");
- (MPSGraphTensor*)meanOfTensor:(MPSGraphTensor*)tensor
                           axes:(NSArray<NSNumber*>*)axes
                           name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/mean(of:axes:name:)");

// Linear algebra
- (MPSGraphTensor*)matrixMultiplicationWithPrimaryTensor:(MPSGraphTensor*)primaryTensor
                                         secondaryTensor:(MPSGraphTensor*)secondaryTensor
                                                    name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/matrixmultiplication(primary:secondary:name:)");

// Shapes and layout
- (MPSGraphTensor*)reshapeTensor:(MPSGraphTensor*)tensor
                       withShape:(MPSShape*)shape
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/reshape(_:shape:name:)");
- (MPSGraphTensor*)broadcastTensor:(MPSGraphTensor*)tensor
                           toShape:(MPSShape*)shape
                              name:(nullable NSString*)name LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/broadcast(_:shape:name:)");
- (MPSGraphTensor*)transposeTensor:(MPSGraphTensor*)tensor
                         dimension:(NSUInteger)dimensionIndex
                     withDimension:(NSUInteger)dimensionIndex2
                              name:(nullable NSString*)name
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/transposetensor(_:dimension:withdimension:name:)");
- (MPSGraphTensor*)transposeTensor:(MPSGraphTensor*)tensor
                       permutation:(NSArray<NSNumber*>*)permutation
                              name:(nullable NSString*)name LUCID_DOC(13.0, "metalperformanceshadersgraph/mpsgraph/transpose(_:permutation:name:)");
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor
                        starts:(NSArray<NSNumber*>*)starts
                          ends:(NSArray<NSNumber*>*)ends
                       strides:(NSArray<NSNumber*>*)strides
                          name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/slicetensor(_:starts:ends:strides:name:)");
- (MPSGraphTensor*)sliceGradientTensor:(MPSGraphTensor*)inputGradientTensor
                      fwdInShapeTensor:(MPSGraphTensor*)fwdInShapeTensor
                                starts:(NSArray<NSNumber*>*)starts
                                  ends:(NSArray<NSNumber*>*)ends
                               strides:(NSArray<NSNumber*>*)strides
                                  name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/slicegradienttensor(_:fwdinshapetensor:starts:ends:strides:name:)");
- (MPSGraphTensor*)shapeOfTensor:(MPSGraphTensor*)tensor
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(12.0, "metalperformanceshadersgraph/mpsgraph/shapeof(_:name:)");
- (MPSGraphTensor*)concatTensors:(NSArray<MPSGraphTensor*>*)tensors
                       dimension:(NSInteger)dimensionIndex
                            name:(nullable NSString*)name LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/concattensors(_:dimension:name:)");
- (MPSGraphTensor*)padTensor:(MPSGraphTensor*)tensor
             withPaddingMode:(MPSGraphPaddingMode)paddingMode
                 leftPadding:(MPSShape*)leftPadding
                rightPadding:(MPSShape*)rightPadding
               constantValue:(double)constantValue
                        name:(nullable NSString*)name
    LUCID_DOC_FAMILY(11.0, "metalperformanceshadersgraph/mpsgraph/padtensor(_:with:leftpadding:rightpadding:constantvalue:name:)");

// Gathers and scatters
- (MPSGraphTensor*)gatherWithUpdatesTensor:(MPSGraphTensor*)updatesTensor
                             indicesTensor:(MPSGraphTensor*)indicesTensor
                                      axis:(NSUInteger)axis
                           batchDimensions:(NSUInteger)batchDimensions
                                      name:(nullable NSString*)name
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/gather(withupdatestensor:indicestensor:axis:batchdimensions:name:)");
- (MPSGraphTensor*)gatherAlongAxis:(NSInteger)axis
                 withUpdatesTensor:(MPSGraphTensor*)updatesTensor
                     indicesTensor:(MPSGraphTensor*)indicesTensor
                              name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.3, "metalperformanceshadersgraph/mpsgraph/gatheralongaxis(_:updates:indices:name:)");
- (MPSGraphTensor*)scatterWithDataTensor:(MPSGraphTensor*)dataTensor
                           updatesTensor:(MPSGraphTensor*)updatesTensor
                           indicesTensor:(MPSGraphTensor*)indicesTensor
                                    axis:(NSInteger)axis
                                    mode:(MPSGraphScatterMode)mode
                                    name:(nullable NSString*)name
    LUCID_DOC(12.0, "metalperformanceshadersgraph/mpsgraph/scatterwithdata(_:updates:indices:axis:mode:name:)");
- (MPSGraphTensor*)scatterAlongAxis:(NSInteger)axis
                     withDataTensor:(MPSGraphTensor*)dataTensor
                      updatesTensor:(MPSGraphTensor*)updatesTensor
                      indicesTensor:(MPSGraphTensor*)indicesTensor
                               mode:(MPSGraphScatterMode)mode
                               name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.3, "metalperformanceshadersgraph/mpsgraph/scatteralongaxis(_:data:updates:indices:mode:name:)");
- (MPSGraphTensor*)scatterAlongAxis:(NSInteger)axis
                  withUpdatesTensor:(MPSGraphTensor*)updatesTensor
                      indicesTensor:(MPSGraphTensor*)indicesTensor
                              shape:(MPSShape*)shape
                               mode:(MPSGraphScatterMode)mode
                               name:(nullable NSString*)name
    LUCID_DOC_FAMILY(12.3, "metalperformanceshadersgraph/mpsgraph/scatteralongaxis(_:updates:indices:shape:mode:name:)");

// Pooling
- (NSArray<MPSGraphTensor*>*)maxPooling2DReturnIndicesWithSourceTensor:(MPSGraphTensor*)source
                                                            descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor
                                                                  name:(nullable NSString*)name
    LUCID_DOC(12.2, "metalperformanceshadersgraph/mpsgraph/maxpooling2dreturnindices(_:descriptor:name:)");
- (MPSGraphTensor*)maxPooling2DGradientWithGradientTensor:(MPSGraphTensor*)gradient
                                            indicesTensor:(MPSGraphTensor*)indices
                                              outputShape:(MPSShape*)outputShape
                                               descriptor:(MPSGraphPooling2DOpDescriptor*)descriptor
                                                     name:(nullable NSString*)name
    LUCID_DOC(13.0, "metalperformanceshadersgraph/mpsgraph/maxpooling2dgradient(withgradienttensor:indicestensor:outputshape:descriptor:name:)");

// Convolution
- (MPSGraphTensor*)convolution2DWithSourceTensor:(MPSGraphTensor*)source
                                   weightsTensor:(MPSGraphTensor*)weights
                                      descriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor
                                            name:(nullable NSString*)name
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/convolution2d(_:weights:descriptor:name:)");
- (MPSGraphTensor*)convolution2DDataGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                         weightsTensor:(MPSGraphTensor*)weights
                                                           outputShape:(MPSShape*)outputShape
                                          forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor
                                                                  name:(nullable NSString*)name
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/convolution2ddatagradient(_:weights:outputshape:forwardconvolutiondescriptor:name:)");
- (MPSGraphTensor*)convolution2DWeightsGradientWithIncomingGradientTensor:(MPSGraphTensor*)incomingGradient
                                                             sourceTensor:(MPSGraphTensor*)source
                                                              outputShape:(MPSShape*)outputShape
                                             forwardConvolutionDescriptor:(MPSGraphConvolution2DOpDescriptor*)descriptor
                                                                     name:(nullable NSString*)name
    LUCID_DOC(11.0, "metalperformanceshadersgraph/mpsgraph/convolution2dweightsgradient(_:source:outputshape:forwardconvolutiondescriptor:name:)");
@end

#pragma clang assume_nonnull end
