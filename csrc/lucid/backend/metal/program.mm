// Program: an MPSGraph compiled once into an MPSGraphExecutable and encoded
// into a command buffer per run.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/program.h"

namespace lucid::metal {

namespace {

// The caller's position of each tensor in `order` (the executable's), by
// identity: the executable hands back the very tensor objects it was given.
std::vector<size_t> slots_of(NSArray<MPSGraphTensor*>* order, const std::vector<MPSGraphTensor*>& mine,
                             const char* what) {
  std::vector<size_t> slots;
  if (order == nil) {  // no reordering information: the order given
    for (size_t i = 0; i < mine.size(); ++i) slots.push_back(i);
    return slots;
  }
  for (MPSGraphTensor* t in order) {
    size_t found = mine.size();
    for (size_t i = 0; i < mine.size(); ++i)
      if (mine[i] == t) {
        found = i;
        break;
      }
    if (found == mine.size()) fail<Error>("metal: the compiled graph lists an unknown ", what, " tensor");
    slots.push_back(found);
  }
  return slots;
}

}  // namespace

Program::Program(MPSGraph* graph, const std::vector<MPSGraphTensor*>& inputs,
                 const std::vector<MPSGraphTensor*>& targets)
    : graph_(graph), inputs_(inputs), targets_(targets) {
  Context& ctx = checked_context();
  NSMutableDictionary<MPSGraphTensor*, MPSGraphShapedType*>* feeds = [NSMutableDictionary dictionary];
  for (MPSGraphTensor* t : inputs_)
    feeds[t] = [[MPSGraphShapedType alloc] initWithShape:t.shape dataType:t.dataType];
  NSMutableArray<MPSGraphTensor*>* target_list = [NSMutableArray arrayWithCapacity:targets_.size()];
  for (MPSGraphTensor* t : targets_) [target_list addObject:t];
  MPSGraphCompilationDescriptor* desc = [MPSGraphCompilationDescriptor new];
  executable_ = [graph_ compileWithDevice:ctx.graph_device
                                    feeds:feeds
                            targetTensors:target_list
                         targetOperations:nil
                    compilationDescriptor:desc];
  if (executable_ == nil) fail<Error>("metal: MPSGraph could not compile the graph");
  feed_slot_ = slots_of(executable_.feedTensors, inputs_, "input");
  target_slot_ = slots_of(executable_.targetTensors, targets_, "result");
  if (target_slot_.size() != targets_.size())
    fail<Error>("metal: the compiled graph returns ", target_slot_.size(), " results, expected ", targets_.size());
}

void Program::encode(MPSCommandBuffer* cb, NSArray<MPSGraphTensorData*>* inputs,
                     NSArray<MPSGraphTensorData*>* results) const {
  NSMutableArray<MPSGraphTensorData*>* ins = [NSMutableArray arrayWithCapacity:feed_slot_.size()];
  for (size_t k : feed_slot_) [ins addObject:inputs[k]];
  NSMutableArray<MPSGraphTensorData*>* outs = [NSMutableArray arrayWithCapacity:target_slot_.size()];
  for (size_t k : target_slot_) [outs addObject:results[k]];
  [executable_ encodeToCommandBuffer:cb inputsArray:ins resultsArray:outs executionDescriptor:nil];
}

}  // namespace lucid::metal
