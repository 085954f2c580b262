// The Metal API the backend uses (see ../lucid_apple_doc.h for the markers).
// Pages are relative to https://developer.apple.com/documentation/metal/.
// Metal's device, queue, buffer and blit API date from macOS 10.11; their
// pages were not opened one by one (LUCID_DOC_FAMILY), except where noted.
#pragma once
#include <stdint.h>

#include "Foundation/Foundation.h"

#pragma clang assume_nonnull begin

typedef NSUInteger MTLResourceOptions LUCID_DOC_STRUCTURAL(10.11, "metal/mtlresourceoptions");
static const MTLResourceOptions MTLResourceStorageModeShared
    LUCID_DOC_FAMILY(10.11, "metal/mtlresourceoptions/storagemodeshared") = 0;

enum MTLCommandBufferStatus : NSUInteger {
  MTLCommandBufferStatusError LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbufferstatus/error") = 5,
};
typedef enum MTLCommandBufferStatus MTLCommandBufferStatus LUCID_DOC_STRUCTURAL(10.11, "metal/mtlcommandbufferstatus");

LUCID_DOC_STRUCTURAL(10.11, "metal/mtlresource")
@protocol MTLResource
@end

LUCID_DOC_FAMILY(10.11, "metal/mtlbuffer")
@protocol MTLBuffer <MTLResource>
- (void*)contents LUCID_DOC_FAMILY(10.11, "metal/mtlbuffer/contents()");
@end

LUCID_DOC_STRUCTURAL(10.11, "metal/mtlcommandencoder")
@protocol MTLCommandEncoder
- (void)endEncoding LUCID_DOC_FAMILY(10.11, "metal/mtlcommandencoder/endencoding()");
@end

LUCID_DOC_FAMILY(10.11, "metal/mtlblitcommandencoder")
@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)copyFromBuffer:(id<MTLBuffer>)sourceBuffer
           sourceOffset:(NSUInteger)sourceOffset
               toBuffer:(id<MTLBuffer>)destinationBuffer
      destinationOffset:(NSUInteger)destinationOffset
                   size:(NSUInteger)size
    LUCID_DOC_FAMILY(10.11, "metal/mtlblitcommandencoder/copy(from:sourceoffset:to:destinationoffset:size:)");
@end

LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer")
@protocol MTLCommandBuffer
- (void)commit LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer/commit()");
- (void)waitUntilCompleted LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer/waituntilcompleted()");
@property(readonly) MTLCommandBufferStatus status LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer/status");
@property(nullable, readonly) NSError* error LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer/error");
- (nullable id<MTLBlitCommandEncoder>)blitCommandEncoder
    LUCID_DOC_FAMILY(10.11, "metal/mtlcommandbuffer/makeblitcommandencoder()");
@end

LUCID_DOC_FAMILY(10.11, "metal/mtlcommandqueue")
@protocol MTLCommandQueue
- (nullable id<MTLCommandBuffer>)commandBuffer LUCID_DOC_FAMILY(10.11, "metal/mtlcommandqueue/makecommandbuffer()");
@end

LUCID_DOC_FAMILY(10.11, "metal/mtldevice")
@protocol MTLDevice
@property(readonly) NSString* name LUCID_DOC_FAMILY(10.11, "metal/mtldevice/name");
- (nullable id<MTLCommandQueue>)newCommandQueue LUCID_DOC_FAMILY(10.11, "metal/mtldevice/makecommandqueue()");
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length
                                      options:(MTLResourceOptions)options
    LUCID_DOC_FAMILY(10.11, "metal/mtldevice/makebuffer(length:options:)");
@property(readonly) uint64_t recommendedMaxWorkingSetSize
    LUCID_DOC_FAMILY(10.12, "metal/mtldevice/recommendedmaxworkingsetsize");
@end

extern "C" {
id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void)
    LUCID_DOC_FAMILY(10.11, "metal/mtlcreatesystemdefaultdevice()");
NSArray<id<MTLDevice>>* MTLCopyAllDevices(void) LUCID_DOC_FAMILY(10.11, "metal/mtlcopyalldevices()");
}

#pragma clang assume_nonnull end
