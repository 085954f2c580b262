#pragma once
// Every primitive call goes through apply(): the shape rule, then either the
// active trace records it or the device's kernel runs, then autograd history.
#include <cstdint>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid {

std::vector<Tensor> apply(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);
Tensor apply1(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);

// Writes `value` (same shape; cast to target's dtype by the caller) into
// `target`'s storage: eagerly a copy, under tracing an assignment.
void assign_data(const Tensor& target, const Tensor& value);

// Number of kernels run eagerly on this thread (the compiled step's cost model
// is checked against it: a compiled call dispatches no eager op).
uint64_t eager_dispatch_count();

}  // namespace lucid
