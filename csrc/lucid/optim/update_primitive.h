#pragma once
// EngineUpdate: one engine optimizer's update of one parameter as a single
// primitive. The eager step runs it through the device's kernel, and a
// compiled step records it as one graph node, so on the CPU the compiled
// update is the very fused loop the eager step runs (the rule instantiated
// with V = the compute type; backend/cpu/optim_kernels.cpp): the same math,
// one pass over memory. A device without a kernel for it gets the rule's
// whole-tensor ops instead (EngineOptimizer decides, through has_kernel),
// and a backend without one compiles a graph traced elsewhere through the
// same ops: decompose() is Algorithm::update_tensors.
// Inputs: param, grad, the state buffers the flags need (in buffer order),
// then the rule's scalars as float64 0-d tensors. Outputs: the new param and
// buffers, which the executable writes straight into the captured buffers.
#include "lucid/ops/primitive.h"
#include "lucid/optim/engine.h"

namespace lucid::optim {

struct EngineUpdate final : Primitive {
  const Algorithm* algo;
  uint32_t flags;  // the structural flags the rule branches on (numbers come from the scalar inputs)
  uint32_t need;   // the buffers those flags need (bit k = buffer k)
  int num_buffers;
  EngineUpdate(const Algorithm* algo, uint32_t flags, uint32_t need)
      : Primitive(OpKind::EngineUpdate), algo(algo), flags(flags), need(need), num_buffers(__builtin_popcount(need)) {}
  std::string name() const override;
  std::vector<TensorMeta> infer(const std::vector<TensorMeta>& inputs) const override;
  bool differentiable_input(int) const override { return false; }
  bool decomposes() const override { return true; }
  std::vector<Tensor> decompose(const std::vector<Tensor>& inputs) const override;
  // Never merged with another node: each one updates its own buffers.
  bool equals(const Primitive& o) const override { return this == &o; }
};

}  // namespace lucid::optim
