#pragma once
// A compiled MPSGraph: what an eager op's cached single-op graph and a
// compiled step both are. Inputs and results are passed in the caller's
// order; the executable's own feed and target order is mapped once, at
// compile time. Objective-C++ only.
#ifndef __OBJC__
#error "backend/metal/program.h is Objective-C++; include it from .mm files only"
#endif

#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <cstddef>
#include <vector>

namespace lucid::metal {

class Program {
 public:
  // Compiles `graph` for the Metal device with `inputs` (placeholders of
  // static shape) as feeds and `targets` (distinct, none a placeholder) as
  // results: compileWithDevice:feeds:targetTensors:targetOperations:
  // compilationDescriptor:.
  Program(MPSGraph* graph, const std::vector<MPSGraphTensor*>& inputs, const std::vector<MPSGraphTensor*>& targets);

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_targets() const { return targets_.size(); }
  MPSGraphTensor* input(size_t i) const { return inputs_[i]; }
  MPSGraphTensor* target(size_t i) const { return targets_[i]; }

  // Encodes one run into `cb` (the caller commits): `inputs` and `results`
  // hold one MPSGraphTensorData per input and target, in the caller's order.
  // MPSGraph writes each result into the buffer its tensor data wraps.
  void encode(MPSCommandBuffer* cb, NSArray<MPSGraphTensorData*>* inputs, NSArray<MPSGraphTensorData*>* results) const;

 private:
  MPSGraph* graph_;
  MPSGraphExecutable* executable_;
  std::vector<MPSGraphTensor*> inputs_, targets_;
  std::vector<size_t> feed_slot_;    // executable feed k <- caller input feed_slot_[k]
  std::vector<size_t> target_slot_;  // executable target k <- caller result target_slot_[k]
};

}  // namespace lucid::metal
