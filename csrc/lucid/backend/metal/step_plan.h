#pragma once
// A compiled step on Metal, planned in portable C++: the optimised IR lowered
// node by node into one plan (lower_primitive), the order of its feeds and
// targets, the random draws made on the host, and the buffer plan of the
// in-place updates. executable.mm binds MTLBuffers by this plan; the
// reference executable (reference.h) follows it with host memory, so the CPU
// suite tests it, including that no run reads and writes one buffer.
//
// In-place updates: MPSGraph must not read and write one buffer in a run. A
// parameter or state tensor the step updates gets its new value in a second
// buffer owned by the executable, and a copy in the same submission moves it
// into the tensor's own buffer after the graph has finished reading; the
// tensor's data pointer never moves (NumPy views, data_ptr() and other
// executables hold it). A captured buffer the step writes once and never
// reads is computed straight into its buffer, unless the run also binds that
// buffer as an input (a step argument aliasing it).
#include <string>
#include <unordered_set>
#include <vector>

#include "lucid/backend/metal/plan.h"
#include "lucid/graph/ir.h"
#include "lucid/ops/primitives.h"

namespace lucid::metal {

// Where the bytes of one graph input come from on each run.
struct StepSlot {
  enum Kind : uint8_t { Input, Feed, Capture, Drawn } kind = Input;
  int index = -1;         // input, feed or capture index; for Drawn, index into StepPlan::draws
  int value = -1;         // the graph value
  TensorMeta meta;        // as the graph sees it (float64 feeds as float32)
  bool from_double = false;  // a float64 host scalar handed to the graph as float32
};

// A Philox draw made on the host from a key feed into a buffer the graph reads.
struct StepDraw {
  int key_value = -1;
  Distribution dist = Distribution::Uniform;
  DType dtype = DType::Float32;
  int64_t count = 0;
};

struct StepTarget {
  int value = -1;           // the graph value
  int output = -1;          // the first step output with this value, computed into its tensor
  int direct_capture = -1;  // a capture written once and never read: may receive the result directly
  TensorMeta meta;
  bool second_buffer() const { return output < 0; }  // a buffer owned by the executable
};

// After the graph: the result of `target` copied into a capture's buffer or
// into a step output (a value returned twice), skipped when it is already
// there.
struct StepCopy {
  int target = -1;
  bool to_capture = true;
  int index = -1;  // capture or output index
  size_t nbytes = 0;
};

struct StepPlan {
  Plan plan;                       // plan.inputs[k] is slots[k], plan.targets[k] is targets[k]
  std::vector<StepSlot> slots;
  std::vector<StepDraw> draws;
  std::vector<StepTarget> targets;
  std::vector<StepCopy> copies;    // in order, after the graph
  size_t nodes = 0, writebacks = 0;
  std::string describe() const;
};

// Replaces the nodes with no Metal form that decompose into primitives (the
// optimizers' EngineUpdate, which a step traced on the CPU records) by their
// decomposition. Every compiled step is planned from the result.
void decompose_unlowered(graph::Graph& g);

// Lowers an optimised step graph. TypeError for a dtype the device lacks
// (float64 other than the optimizers' host scalars); NotImplementedError for a
// primitive with no Metal form or a random key computed inside the step.
StepPlan plan_step(const graph::Graph& g);

// Whether a target with a direct capture may write the capture's buffer in
// this run: not when the run also reads that buffer.
bool writes_capture_directly(const StepTarget& t, const void* capture_buffer,
                             const std::unordered_set<const void*>& read_buffers);

}  // namespace lucid::metal
