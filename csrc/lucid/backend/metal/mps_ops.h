#pragma once
// A plan (plan.h) as MPSGraph operations: one MPSGraph call per plan node,
// nothing decided here. Both the cached single-op graphs of eager ops and the
// compiled step's whole-graph MPSGraph are built by build_graph().
// Objective-C++ only.
#ifndef __OBJC__
#error "backend/metal/mps_ops.h is Objective-C++; include it from .mm files only"
#endif

#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <vector>

#include "lucid/backend/metal/plan.h"

namespace lucid::metal {

struct BuiltGraph {
  MPSGraph* graph = nil;
  std::vector<MPSGraphTensor*> inputs;   // one per plan.inputs, in order
  std::vector<MPSGraphTensor*> targets;  // one per plan.targets, in order
};

// TypeError for bfloat16 before macOS 14 (mps_dtype), naming `what`.
BuiltGraph build_graph(const Plan& plan, const char* what);

}  // namespace lucid::metal
