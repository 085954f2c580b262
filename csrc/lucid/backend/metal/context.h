#pragma once
// Shared state of the Metal backend: the device and its command queue, the
// lookup from a tensor's data pointer to the MTLBuffer behind it, dtype and
// shape translation, and the autorelease/exception boundary every entry point
// crosses. Objective-C++ only: plain C++ includes backend/metal/metal.h.
#ifndef __OBJC__
#error "backend/metal/context.h is Objective-C++; include it from .mm files only"
#endif

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <cstddef>
#include <exception>
#include <string>

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/shape.h"

namespace lucid::metal {

struct Context {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  MPSGraphDevice* graph_device = nil;
};

// The process-wide context, created on first use; nullptr when there is no
// Metal device MPSGraph can run on (or LUCID_DISABLE_METAL is set).
Context* context();
// The context, or TypeError naming the missing device.
Context& checked_context();

// The buffer behind a pointer the Metal allocator handed out (or a pointer
// inside such a block) and the pointer's offset in it; buffer is nil for
// memory that is not the allocator's (host memory, NumPy arrays).
struct BufferRef {
  id<MTLBuffer> buffer = nil;
  size_t offset = 0;
};
BufferRef find_buffer(const void* ptr);

// A shared-storage buffer owned by the caller (staging areas, second buffers
// of in-place updates), at least `nbytes` long and a multiple of 16 bytes.
id<MTLBuffer> new_shared_buffer(size_t nbytes);

// MPSGraph's type for a dtype. TypeError for float64 (MPSGraph has no 64-bit
// float) and for bfloat16 before macOS 14; `what` names the operation.
MPSDataType mps_dtype(DType t, const char* what = "metal");
// A tensor shape as MPSGraph sees it. 0-d tensors are [1] inside graphs: the
// same bytes, and every op broadcasts a [1] like a scalar.
MPSShape* mps_shape(const Shape& s);

// Waits for a committed command buffer; Error naming `what` if it failed.
void wait_and_check(id<MTLCommandBuffer> cb, const std::string& what);

// Runs `fn` inside an autorelease pool (the core's threads have none).
// Objective-C exceptions (MPSGraph's shape assertions) become lucid Errors;
// C++ exceptions leave after the pool is drained.
template <class F>
void with_pool(F&& fn) {
  std::exception_ptr error;
  std::string objc_reason;
  bool objc_failed = false;
  @autoreleasepool {
    try {
      @try {
        fn();
      } @catch (NSException* e) {
        objc_failed = true;
        objc_reason = e.reason ? std::string(e.reason.UTF8String) : std::string(e.name.UTF8String);
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (objc_failed) fail<Error>("metal: ", objc_reason);
  if (error) std::rethrow_exception(error);
}

}  // namespace lucid::metal
