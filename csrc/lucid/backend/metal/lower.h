#pragma once
// The Metal form of every primitive, defined once, in portable C++: which
// MPSGraph operations a primitive becomes (with its axes, casts and broadcast
// handling), how each kind reaches the device (a graph, a host-side fill or a
// blit), the eager single-op plan and its cache key, and the host-side
// definitions (fill values, Philox draws, index checks). Built and tested on
// every platform; backend/metal/*.mm turns the plans into MPSGraph calls.
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/backend/metal/plan.h"
#include "lucid/core/tensor.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::metal {

// How the metal device runs a primitive kind: the one table the kernel
// registration and the compiled step read.
enum class Lowering : uint8_t {
  None,      // no Metal form: NotImplementedError naming the operator
  Graph,     // MPSGraph operations from lower_primitive()
  HostFill,  // written by the host into the shared buffer (no input to read)
  Blit,      // a buffer-to-buffer copy
};
Lowering lowering_of(OpKind kind);
const char* op_kind_name(OpKind kind);  // "Unary", ...

// `prim` on `inputs` (one value per input; -1 exactly for an input with no
// elements) into `g`; returns one value per output in exactly the output's
// shape (0-d as [1]) and dtype, -1 for an output with no elements.
// TypeError for a dtype the device lacks (float64); NotImplementedError naming
// the operator for a primitive with no graph form.
std::vector<int> lower_primitive(PlanBuilder& g, const Primitive& prim, const std::vector<int>& inputs,
                                 const std::vector<TensorMeta>& in_metas, const std::vector<TensorMeta>& out_metas);

// An eager op as one MPSGraph: a placeholder per input with elements (in
// input order) and a target per output with elements (in output order).
struct EagerPlan {
  Plan plan;
  std::vector<int> input_of_placeholder;  // plan.inputs[k] binds input input_of_placeholder[k]
  std::vector<int> output_of_target;      // plan.targets[k] is output output_of_target[k]
  bool empty() const { return plan.targets.empty(); }
  // The eager program cache key: the plan (which holds every attribute that
  // changes the graph) plus the binding order.
  std::string key() const;
};
EagerPlan plan_eager(const Primitive& prim, const std::vector<TensorMeta>& in_metas,
                     const std::vector<TensorMeta>& out_metas);

// TypeError naming `what` for a dtype MPSGraph lacks (float64).
void check_dtype(DType t, const char* what);

// `value` converted to `dtype` and stored at `dst` exactly as the CPU kernels
// store a fill value (16-bit floats round through float32).
void write_value(void* dst, DType dtype, double value);

// Elements [0, n) of the Philox draw keyed by (seed, offset) into `dst`: the
// generator of core/philox.h, so every device produces the same numbers.
void fill_random(void* dst, DType dtype, Distribution dist, uint64_t seed, uint64_t offset, int64_t n);

// The output of a HostFill primitive (Full, Arange, Random) written at `dst`;
// `inputs` holds Random's key.
void fill_host(const Primitive& prim, const std::vector<ConstArg>& inputs, void* dst, const TensorMeta& out);

// IndexError for an index outside [0, size) (as on the CPU) of Gather, ScatterAdd, IndexSelect or
// IndexAdd, read from host-visible memory before the op runs (a GPU cannot
// raise); no-op for other primitives.
void check_indices(const Primitive& prim, const std::vector<ConstArg>& inputs);

// The CPU's ZeroDivisionError for an integer div, floor_divide or remainder
// with a zero divisor, read from host-visible memory before the op runs;
// no-op for other primitives.
void check_divisors(const Primitive& prim, const std::vector<ConstArg>& inputs);

// A strided operand (a view: sizes, element strides, element offset) read
// from the flat placeholder `storage` of its whole buffer: a slice when the
// view is a contiguous block, a gather at host-computed element positions
// otherwise. Where views reach the backend this is the one place that makes
// them contiguous on the device (docs/metal.md, "Views").
int read_strided(PlanBuilder& g, int storage, const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset);

}  // namespace lucid::metal
