#pragma once
// The Metal form of every primitive, defined once: emit_primitive() builds a
// primitive's MPSGraph operations, and both the cached single-op graphs of
// eager ops and the compiled step's whole-graph MPSGraph are made of it.
// The few host-side definitions (fill values, Philox draws, index checks)
// live here too. Objective-C++ only.
#ifndef __OBJC__
#error "backend/metal/mps_ops.h is Objective-C++; include it from .mm files only"
#endif

#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::metal {

// The operations of `prim` on `inputs`: one tensor per input, nil exactly for
// an input with no elements. Returns one tensor per output, in the output's
// shape (0-d as [1]) and dtype; nil for an output with no elements.
// NotImplementedError naming the operator when it has no Metal form (Random
// draws are made on the host: see fill_random).
std::vector<MPSGraphTensor*> emit_primitive(MPSGraph* graph, const Primitive& prim,
                                            const std::vector<MPSGraphTensor*>& inputs,
                                            const std::vector<TensorMeta>& in_metas,
                                            const std::vector<TensorMeta>& out_metas);

// A string naming `prim` with every attribute: the eager graph cache key.
std::string primitive_key(const Primitive& prim);

// `value` converted to `dtype` and stored at `dst` exactly as the CPU kernels
// store a fill value (16-bit floats round through float32).
void write_value(void* dst, DType dtype, double value);

// Elements [0, n) of the Philox draw keyed by (seed, offset) into `dst`: the
// generator of core/philox.h, so every device produces the same numbers.
void fill_random(void* dst, DType dtype, Distribution dist, uint64_t seed, uint64_t offset, int64_t n);

// IndexError for an out-of-range index of Gather, ScatterAdd, IndexSelect or
// IndexAdd, read from host-visible memory before the op runs (a GPU cannot
// raise); no-op for other primitives.
void check_indices(const Primitive& prim, const std::vector<ConstArg>& inputs);

}  // namespace lucid::metal
