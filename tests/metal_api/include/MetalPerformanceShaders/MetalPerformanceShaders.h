// The MetalPerformanceShaders API the backend uses (see ../lucid_apple_doc.h
// for the markers). Pages are relative to https://developer.apple.com/documentation/.
#pragma once
#include <stdint.h>

#include "Foundation/Foundation.h"
#include "Metal/Metal.h"

#pragma clang assume_nonnull begin

// MPSDataType's raw type is UInt32 (Swift's init?(rawValue: UInt32)). The
// enumerator values are not something this check can verify and are left
// implicit; the backend never relies on them.
enum MPSDataType : uint32_t {
  MPSDataTypeFloat32 LUCID_DOC_FAMILY(10.13, "metalperformanceshaders/mpsdatatype/float32"),
  MPSDataTypeFloat16 LUCID_DOC_FAMILY(10.13, "metalperformanceshaders/mpsdatatype/float16"),
  MPSDataTypeInt32 LUCID_DOC_FAMILY(10.13, "metalperformanceshaders/mpsdatatype/int32"),
  MPSDataTypeInt16 LUCID_DOC_FAMILY(10.13, "metalperformanceshaders/mpsdatatype/int16"),
  MPSDataTypeInt8 LUCID_DOC(10.13, "metalperformanceshaders/mpsdatatype/int8"),
  MPSDataTypeUInt8 LUCID_DOC_FAMILY(10.13, "metalperformanceshaders/mpsdatatype/uint8"),
  // uInt64's page (read) gives macOS 11.0 for the 64-bit integer types.
  MPSDataTypeInt64 LUCID_DOC_FAMILY(11.0, "metalperformanceshaders/mpsdatatype/int64"),
  MPSDataTypeBool LUCID_DOC_FAMILY(11.0, "metalperformanceshaders/mpsdatatype/bool"),
  MPSDataTypeBFloat16 LUCID_DOC(14.0, "metalperformanceshaders/mpsdatatype/bfloat16"),
};
typedef enum MPSDataType MPSDataType LUCID_DOC(10.13, "metalperformanceshaders/mpsdatatype");

typedef NSArray<NSNumber*> MPSShape LUCID_DOC_FAMILY(11.0, "metalperformanceshaders/mpsshape");

// An NSObject that conforms to MTLCommandBuffer.
LUCID_DOC(10.15, "metalperformanceshaders/mpscommandbuffer")
@interface MPSCommandBuffer : NSObject <MTLCommandBuffer>
+ (instancetype)commandBufferFromCommandQueue:(id<MTLCommandQueue>)commandQueue
    LUCID_DOC(10.15, "metalperformanceshaders/mpscommandbuffer/init(fromcommandqueue:)");
@end

#pragma clang assume_nonnull end
