#pragma once
// EngineUpdate: one engine optimizer's update of one parameter as a single
// graph node. A compiled step on the CPU records this instead of the rule's
// ops, so its kernel is the very fused loop the eager step runs (the rule
// instantiated with V = the compute type): the same math, one pass over
// memory. Inputs: param, grad, the state buffers the flags need (in buffer
// order), then the rule's scalars as 0-d feeds. Outputs: the new param and
// buffers, which the executable writes straight into the captured buffers.
#include "lucid/ops/primitive.h"
#include "lucid/optim/engine.h"

namespace lucid::optim {

struct EngineUpdate final : Primitive {
  const Algorithm* algo;
  Hyper hyper;  // the flags the rule branches on (numbers come from the scalar inputs)
  int num_buffers;
  EngineUpdate(const Algorithm* algo, Hyper hyper, int num_buffers)
      : Primitive(OpKind::EngineUpdate), algo(algo), hyper(std::move(hyper)), num_buffers(num_buffers) {}
  std::string name() const override;
  std::vector<TensorMeta> infer(const std::vector<TensorMeta>& inputs) const override;
  bool differentiable_input(int) const override { return false; }
  // Never merged with another node: each one updates its own buffers.
  bool equals(const Primitive& o) const override { return this == &o; }
};

}  // namespace lucid::optim
