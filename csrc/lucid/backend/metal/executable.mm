// The compiled step on Metal: the step plan (step_plan.h, portable and tested
// on the CPU) built as one MPSGraph, compiled once per signature into an
// MPSGraphExecutable. A run binds the plan's inputs (step arguments, feeds,
// captured buffers, host draws), encodes the executable and the plan's
// copies (in-place updates) into one command buffer, commits it once and
// waits. Every decision (feed and target order, which update goes through a
// second buffer, which copies follow the graph) is the plan's; this file
// binds MTLBuffers to it.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <cstring>
#include <memory>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/lower.h"
#include "lucid/backend/metal/mps_ops.h"
#include "lucid/backend/metal/program.h"
#include "lucid/backend/metal/step_plan.h"
#include "lucid/graph/executable.h"

namespace lucid::metal {

namespace {

using graph::Graph;
using graph::ValueKind;

size_t nbytes_of(const TensorMeta& m) { return size_t(m.numel()) * itemsize(m.dtype); }
// Blit sizes are multiples of 4 on macOS; every buffer is a multiple of 16 long.
size_t blit_size(size_t n) { return (n + 3) / 4 * 4; }
const void* identity_of(id<MTLBuffer> b) { return (__bridge const void*)b; }

class MetalExecutable final : public graph::Executable {
 public:
  MetalExecutable(Graph g, std::vector<graph::RandomKeyFeed> rf) : Executable(std::move(g), std::move(rf)) {
    step_ = plan_step(graph_);
    with_pool([&] { build(); });
  }

  std::string describe() const override { return step_.describe(); }

 private:
  void build() {
    for (const auto& s : step_.slots) mps_dtype(s.meta.dtype, "compiled step");
    for (const auto& t : step_.targets) mps_dtype(t.meta.dtype, "compiled step");
    for (const auto& d : step_.draws) draw_buffers_.push_back(new_shared_buffer(size_t(d.count) * itemsize(d.dtype)));
    staging_.assign(step_.slots.size(), nil);
    output_staging_.assign(step_.targets.size(), nil);
    for (const auto& t : step_.targets)
      second_.push_back(t.second_buffer() ? Tensor::empty(t.meta.shape, t.meta.dtype, Device{DeviceType::Metal, 0})
                                          : Tensor());
    if (step_.plan.targets.empty()) return;  // nothing with elements to compute
    BuiltGraph bg = build_graph(step_.plan, "compiled step");
    program_ = std::make_unique<Program>(bg.graph, bg.inputs, bg.targets);
  }

  const void* host_data(int v, const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) const {
    const graph::Value& val = graph_.values[size_t(v)];
    switch (val.kind) {
      case ValueKind::Input: return inputs[size_t(val.index)].raw_data();
      case ValueKind::Feed: return feeds[size_t(val.index)].raw_data();
      case ValueKind::Capture: return graph_.captures[size_t(val.index)].storage->data();
      case ValueKind::Node: break;
    }
    return nullptr;
  }

  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) override {
    std::vector<Tensor> outs;
    for (int o : graph_.outputs) {
      const TensorMeta& m = graph_.values[size_t(o)].meta;
      outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    }
    if (program_) with_pool([&] { run(inputs, feeds, outs); });
    for (const auto& w : graph_.writebacks) graph_.captures[size_t(w.capture)].storage->bump_version();
    return outs;
  }

  void run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds, std::vector<Tensor>& outs) {
    Context& ctx = checked_context();

    // Inputs: the tensors' own buffers, host memory through staging.
    NSMutableArray<MPSGraphTensorData*>* in_data = [NSMutableArray arrayWithCapacity:step_.slots.size()];
    std::unordered_set<const void*> read;
    for (size_t k = 0; k < step_.slots.size(); ++k) {
      const StepSlot& s = step_.slots[k];
      id<MTLBuffer> buf = nil;
      if (s.kind == StepSlot::Drawn) {
        const StepDraw& d = step_.draws[size_t(s.index)];
        const int64_t* key = static_cast<const int64_t*>(host_data(d.key_value, inputs, feeds));
        buf = draw_buffers_[size_t(s.index)];
        fill_random(buf.contents, d.dtype, d.dist, uint64_t(key[0]), uint64_t(key[1]), d.count);
      } else {
        const void* host = host_data(s.value, inputs, feeds);
        const BufferRef r = find_buffer(host);
        if (s.from_double) {
          if (staging_[k] == nil) staging_[k] = new_shared_buffer(size_t(s.meta.numel()) * sizeof(float));
          float* dst = static_cast<float*>(staging_[k].contents);
          for (int64_t i = 0; i < s.meta.numel(); ++i) dst[i] = float(static_cast<const double*>(host)[i]);
          buf = staging_[k];
        } else if (r.buffer != nil && r.offset == 0) {
          buf = r.buffer;
        } else {
          if (staging_[k] == nil) staging_[k] = new_shared_buffer(nbytes_of(s.meta));
          std::memcpy(staging_[k].contents, host, nbytes_of(s.meta));
          buf = staging_[k];
        }
      }
      read.insert(identity_of(buf));
      [in_data addObject:[[MPSGraphTensorData alloc] initWithMTLBuffer:buf
                                                                  shape:mps_shape(s.meta.shape)
                                                               dataType:mps_dtype(s.meta.dtype)]];
    }

    // Results: output tensors, captured buffers written directly, or the
    // second buffers of in-place updates.
    NSMutableArray<MPSGraphTensorData*>* res_data = [NSMutableArray arrayWithCapacity:step_.targets.size()];
    std::vector<id<MTLBuffer>> result_buf(step_.targets.size());
    std::vector<std::pair<void*, size_t>> staged_outputs;  // (host destination, target)
    for (size_t i = 0; i < step_.targets.size(); ++i) {
      const StepTarget& t = step_.targets[i];
      id<MTLBuffer> buf = nil;
      if (t.output >= 0) {
        void* host = outs[size_t(t.output)].raw_data();
        const BufferRef r = find_buffer(host);
        if (r.buffer != nil && r.offset == 0) {
          buf = r.buffer;
        } else {
          if (output_staging_[i] == nil) output_staging_[i] = new_shared_buffer(nbytes_of(t.meta));
          buf = output_staging_[i];
          staged_outputs.emplace_back(host, i);
        }
      } else {
        if (t.direct_capture >= 0) {
          const BufferRef r = find_buffer(graph_.captures[size_t(t.direct_capture)].storage->data());
          if (r.buffer != nil && r.offset == 0 && writes_capture_directly(t, identity_of(r.buffer), read)) buf = r.buffer;
        }
        if (buf == nil) buf = find_buffer(second_[i].raw_data()).buffer;
      }
      result_buf[i] = buf;
      [res_data addObject:[[MPSGraphTensorData alloc] initWithMTLBuffer:buf
                                                                   shape:mps_shape(t.meta.shape)
                                                                dataType:mps_dtype(t.meta.dtype)]];
    }

    MPSCommandBuffer* cb = [MPSCommandBuffer commandBufferFromCommandQueue:ctx.queue];
    program_->encode(cb, in_data, res_data);

    // The plan's copies, encoded after the graph in the same command buffer:
    // one submission per step.
    id<MTLBlitCommandEncoder> blit = nil;
    std::vector<std::tuple<void*, id<MTLBuffer>, size_t>> host_copies;
    for (const StepCopy& c : step_.copies) {
      void* dst = c.to_capture ? graph_.captures[size_t(c.index)].storage->data() : outs[size_t(c.index)].raw_data();
      id<MTLBuffer> src = result_buf[size_t(c.target)];
      const BufferRef d = find_buffer(dst);
      if (d.buffer == src) continue;  // already computed in place
      if (d.buffer != nil && d.offset == 0) {
        if (blit == nil) blit = [cb blitCommandEncoder];
        [blit copyFromBuffer:src sourceOffset:0 toBuffer:d.buffer destinationOffset:0 size:blit_size(c.nbytes)];
      } else {
        host_copies.emplace_back(dst, src, c.nbytes);
      }
    }
    if (blit != nil) [blit endEncoding];
    [cb commit];
    wait_and_check(cb, "compiled step");

    for (auto& [host, i] : staged_outputs) std::memcpy(host, result_buf[i].contents, nbytes_of(step_.targets[i].meta));
    for (auto& [dst, src, n] : host_copies) std::memcpy(dst, src.contents, n);
  }

  StepPlan step_;
  std::unique_ptr<Program> program_;           // null when no result has elements
  std::vector<id<MTLBuffer>> draw_buffers_;    // one per host draw
  std::vector<id<MTLBuffer>> staging_;         // per plan input, for host memory, made on first need
  std::vector<id<MTLBuffer>> output_staging_;  // per target, for outputs in host memory
  std::vector<Tensor> second_;                 // per target: the second buffer of an in-place update
};

std::shared_ptr<graph::Executable> compile_metal(Graph g, std::vector<graph::RandomKeyFeed> rf) {
  checked_context();
  decompose_unlowered(g);
  return std::make_shared<MetalExecutable>(std::move(g), std::move(rf));
}

struct Registrar {
  Registrar() {
    if (context()) graph::register_compiler(DeviceType::Metal, compile_metal);
  }
} registrar;

}  // namespace

}  // namespace lucid::metal
