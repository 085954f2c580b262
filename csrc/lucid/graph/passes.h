#pragma once
// Graph-to-graph passes run before a backend compiles a trace. Each keeps
// value ids stable and rewrites uses in place.
#include <functional>

#include "lucid/graph/ir.h"

namespace lucid::graph {

// Drops nodes whose outputs reach no output or writeback.
void eliminate_dead_code(Graph& g);
// Merges nodes with equal primitives (attributes included) and equal inputs.
void eliminate_common_subexpressions(Graph& g);
// Evaluates nodes whose inputs are all constants (creation primitives and
// their pure consumers) once, at compile time; results become constant
// captures.
void fold_constants(Graph& g);
// A sum of slice_scatters into zeros whose slices tile one axis (the
// gradient of unbind/chunk) becomes one concat.
void concat_scattered_sums(Graph& g);
// The ReLU gradient after a max-pool's (conv, ReLU, max-pool):
// where(y > 0, max_pool2d_backward(g, idx), 0) with y the pool's input
// becomes max_pool2d_backward(where(pooled > 0, g, 0), idx). The pool's
// gradient only lands where y is a window's maximum, which is what the pool
// returned there, so the mask is read on the pooled grid: the same values,
// without a pass over the full-size gradient.
void mask_pooled_relu_gradients(Graph& g);
// Removes reshapes of reshapes and reshapes to the same shape.
void simplify_reshapes(Graph& g);
// Composes permutes of permutes and removes identity permutes.
void simplify_permutes(Graph& g);
// Drops copies of values that no run overwrites (all but captured buffers).
void eliminate_redundant_copies(Graph& g);

// Replaces every node whose primitive `unsupported` selects, and that
// decomposes (Primitive::decompose), by the nodes its decomposition records:
// how a backend compiles a graph holding a fused primitive it has no form
// for (a step traced on a device with a kernel for it).
void decompose_primitives(Graph& g, const std::function<bool(const Primitive&)>& unsupported);

// The standard pipeline, in order.
void optimize(Graph& g);

}  // namespace lucid::graph
