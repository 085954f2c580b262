// The compiled step on Metal. The optimised IR maps node by node onto one
// MPSGraph (emit_primitive, the same definitions eager ops use), compiled
// once per signature into an MPSGraphExecutable. A run binds the step's
// arguments, feeds and captured buffers as inputs, encodes the executable and
// the in-place updates into one command buffer, commits it once and waits.
//
// In-place updates: MPSGraph must not read and write one buffer in a run, so
// each updated tensor has a second buffer that receives its new value, and a
// blit in the same command buffer moves it into the tensor's own buffer after
// the graph has finished reading. (Swapping the two buffers instead would
// move the tensor's data pointer, which NumPy views and other executables
// hold.) A capture the step only writes is computed straight into its buffer.
//
// Random: Philox draws are made on the host from the run's key feeds (the
// same generator as every other device) into shared buffers the graph reads.
//
// float64 host scalars: MPSGraph has no float64, so float64 feeds (the
// optimizers' hyper-parameters, which the update rules cast to the parameter
// dtype on entry) are rounded to float32 on the host, exactly as that cast
// rounds them. Any other float64 value raises TypeError.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/mps_ops.h"
#include "lucid/backend/metal/program.h"
#include "lucid/graph/executable.h"
#include "lucid/ops/primitives.h"

namespace lucid::metal {

namespace {

using graph::Graph;
using graph::ValueKind;

size_t nbytes_of(const TensorMeta& m) { return size_t(m.numel()) * itemsize(m.dtype); }
// Blit sizes are multiples of 4 on macOS; every buffer is a multiple of 16 long.
size_t blit_size(size_t n) { return (n + 3) / 4 * 4; }

class MetalExecutable final : public graph::Executable {
 public:
  MetalExecutable(Graph g, std::vector<graph::RandomKeyFeed> rf) : Executable(std::move(g), std::move(rf)) {
    with_pool([&] { build(); });
  }

  std::string describe() const override {
    int direct = 0;
    for (const auto& t : targets_) direct += t.direct_capture >= 0;
    std::ostringstream os;
    os << "metal executable: one MPSGraph for " << graph_.nodes.size() << " nodes, " << slots_.size()
       << " inputs, " << targets_.size() << " results, " << graph_.writebacks.size() << " in-place updates ("
       << direct << " written directly, the rest through a second buffer), " << draws_.size()
       << " random draws made on the host";
    return os.str();
  }

 private:
  // Where the bytes of one graph input come from on each run.
  struct Slot {
    enum Kind : uint8_t { Input, Feed, Capture, Drawn } kind;
    int index;  // input, feed or capture index; for Drawn, index into draws_
    int value;
    MPSShape* shape;
    MPSDataType type;
    id<MTLBuffer> staging;  // for host memory, made on first need
    bool from_double;       // a float64 feed handed to the graph as float32
  };
  struct Draw {
    int key_value;
    Distribution dist;
    DType dtype;
    int64_t count;
    id<MTLBuffer> buffer;
  };
  struct Target {
    int value = -1;
    MPSShape* shape = nil;
    MPSDataType type = MPSDataTypeInvalid;
    int output = -1;          // the first step output with this value
    int direct_capture = -1;  // a capture that is written but never read
    Tensor second;            // where a new value goes before it is copied in place
    id<MTLBuffer> staging;    // for an output in host memory
  };

  const void* host_data(int v, const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) const {
    const graph::Value& val = graph_.values[v];
    switch (val.kind) {
      case ValueKind::Input: return inputs[val.index].raw_data();
      case ValueKind::Feed: return feeds[val.index].raw_data();
      case ValueKind::Capture: return graph_.captures[val.index].storage->data();
      case ValueKind::Node: break;
    }
    return nullptr;
  }

  bool demoted(int v) const {
    const graph::Value& val = graph_.values[v];
    return val.kind == ValueKind::Feed && val.meta.dtype == DType::Float64;
  }
  // A value's meta as the graph sees it.
  TensorMeta meta_of(int v) const {
    TensorMeta m = graph_.values[v].meta;
    if (demoted(v)) m.dtype = DType::Float32;
    return m;
  }

  void build() {
    const Graph& g = graph_;
    for (const auto& n : g.nodes) {
      for (int v : n.inputs) mps_dtype(meta_of(v).dtype, "compiled step");
      for (int v : n.outputs) mps_dtype(meta_of(v).dtype, "compiled step");
    }
    for (int v : g.outputs) mps_dtype(g.values[v].meta.dtype, "compiled step");
    for (const auto& w : g.writebacks) mps_dtype(g.values[w.value].meta.dtype, "compiled step");

    MPSGraph* mg = [MPSGraph new];
    std::vector<MPSGraphTensor*> tensors(g.values.size(), nil);
    std::vector<MPSGraphTensor*> placeholders;
    auto placeholder = [&](int v, Slot::Kind kind, int index) {
      const TensorMeta m = meta_of(v);
      MPSGraphTensor* t = [mg placeholderWithShape:mps_shape(m.shape) dataType:mps_dtype(m.dtype) name:nil];
      slots_.push_back({kind, index, v, mps_shape(m.shape), mps_dtype(m.dtype), nil, demoted(v)});
      placeholders.push_back(t);
      tensors[size_t(v)] = t;
      return t;
    };
    // A value's tensor; inputs, feeds and captures become placeholders when
    // first read. nil for a value with no elements.
    auto tensor_of = [&](int v) -> MPSGraphTensor* {
      const graph::Value& val = g.values[v];
      if (tensors[size_t(v)] != nil || val.meta.numel() == 0) return tensors[size_t(v)];
      switch (val.kind) {
        case ValueKind::Input: return placeholder(v, Slot::Input, val.index);
        case ValueKind::Feed: return placeholder(v, Slot::Feed, val.index);
        case ValueKind::Capture: return placeholder(v, Slot::Capture, val.index);
        case ValueKind::Node: break;
      }
      fail<Error>("compiled step: value %", v, " is read before it is computed");
    };

    for (const auto& n : g.nodes) {
      bool any_output = false;
      for (int o : n.outputs) any_output |= g.values[o].meta.numel() > 0;
      if (!any_output) continue;
      if (n.prim->kind() == OpKind::Random) {
        const auto& r = static_cast<const Random&>(*n.prim);
        const int key = n.inputs[0];
        if (g.values[key].kind == ValueKind::Node)
          fail<NotImplementedError>("compiled step on the metal device: '", r.name(),
                                    "' needs its random key as a step feed, not a value computed in the step");
        const TensorMeta& m = g.values[n.outputs[0]].meta;
        draws_.push_back({key, r.dist, m.dtype, m.numel(), new_shared_buffer(nbytes_of(m))});
        placeholder(n.outputs[0], Slot::Drawn, int(draws_.size()) - 1);
        continue;
      }
      std::vector<MPSGraphTensor*> ins;
      std::vector<TensorMeta> in_metas, out_metas;
      for (int v : n.inputs) {
        ins.push_back(tensor_of(v));
        in_metas.push_back(meta_of(v));
      }
      for (int o : n.outputs) out_metas.push_back(g.values[o].meta);
      std::vector<MPSGraphTensor*> outs = emit_primitive(mg, *n.prim, ins, in_metas, out_metas);
      for (size_t k = 0; k < outs.size(); ++k) tensors[size_t(n.outputs[k])] = outs[k];
    }

    // Results: every step output and every new value of a captured buffer,
    // each once. A result that is a graph input as-is, or the same tensor as
    // another result, gets its own identity op: targets are distinct ops.
    std::vector<int> wanted(g.outputs.begin(), g.outputs.end());
    for (const auto& w : g.writebacks) wanted.push_back(w.value);
    std::unordered_set<const void*> taken;
    std::vector<MPSGraphTensor*> results;
    for (int v : wanted) {
      if (g.values[v].meta.numel() == 0 || target_of_.count(v)) continue;
      MPSGraphTensor* t = tensor_of(v);
      bool is_input = false;
      for (MPSGraphTensor* p : placeholders) is_input |= p == t;
      if (is_input || taken.count((__bridge const void*)t)) t = [mg identityWithTensor:t name:nil];
      taken.insert((__bridge const void*)t);
      const TensorMeta& m = g.values[v].meta;
      Target target;
      target.value = v;
      target.shape = mps_shape(m.shape);
      target.type = mps_dtype(m.dtype);
      for (size_t i = 0; i < g.outputs.size(); ++i)
        if (g.outputs[i] == v) {
          target.output = int(i);
          break;
        }
      target_of_[v] = int(targets_.size());
      targets_.push_back(target);
      results.push_back(t);
    }

    // In-place updates: a capture written once and never read can receive
    // its new value directly; every other one goes through a second buffer.
    std::unordered_map<int, int> writes_of_value;
    for (const auto& w : g.writebacks) ++writes_of_value[w.value];
    for (const auto& w : g.writebacks) {
      auto it = target_of_.find(w.value);
      if (it == target_of_.end()) continue;
      Target& t = targets_[size_t(it->second)];
      if (t.output >= 0) continue;  // computed into the output tensor, copied from there
      if (writes_of_value[w.value] == 1 && tensors[size_t(g.captures[w.capture].value)] == nil)
        t.direct_capture = w.capture;
    }
    for (Target& t : targets_) {
      const TensorMeta& m = g.values[t.value].meta;
      if (t.output < 0) t.second = Tensor::empty(m.shape, m.dtype, Device{DeviceType::Metal, 0});
    }

    if (!results.empty()) program_ = std::make_unique<Program>(mg, placeholders, results);
  }

  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) override {
    std::vector<Tensor> outs;
    for (int o : graph_.outputs) {
      const TensorMeta& m = graph_.values[o].meta;
      outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    }
    if (!program_) {  // nothing with elements to compute
      for (const auto& w : graph_.writebacks) graph_.captures[size_t(w.capture)].storage->bump_version();
      return outs;
    }
    with_pool([&] {
      Context& ctx = checked_context();

      // Inputs: the tensors' own buffers, host memory through staging.
      NSMutableArray<MPSGraphTensorData*>* in_data = [NSMutableArray arrayWithCapacity:slots_.size()];
      std::unordered_set<const void*> read;
      for (Slot& s : slots_) {
        id<MTLBuffer> buf = nil;
        if (s.kind == Slot::Drawn) {
          Draw& d = draws_[size_t(s.index)];
          const int64_t* key = static_cast<const int64_t*>(host_data(d.key_value, inputs, feeds));
          fill_random(d.buffer.contents, d.dtype, d.dist, uint64_t(key[0]), uint64_t(key[1]), d.count);
          buf = d.buffer;
        } else {
          const void* host = host_data(s.value, inputs, feeds);
          const TensorMeta& m = graph_.values[s.value].meta;
          const size_t n = nbytes_of(m);
          BufferRef r = find_buffer(host);
          if (s.from_double) {
            if (s.staging == nil) s.staging = new_shared_buffer(size_t(m.numel()) * sizeof(float));
            float* dst = static_cast<float*>(s.staging.contents);
            for (int64_t i = 0; i < m.numel(); ++i) dst[i] = float(static_cast<const double*>(host)[i]);
            buf = s.staging;
          } else if (r.buffer != nil && r.offset == 0) {
            buf = r.buffer;
          } else {
            if (s.staging == nil) s.staging = new_shared_buffer(n);
            std::memcpy(s.staging.contents, host, n);
            buf = s.staging;
          }
        }
        read.insert((__bridge const void*)buf);
        [in_data addObject:[[MPSGraphTensorData alloc] initWithMTLBuffer:buf shape:s.shape dataType:s.type]];
      }

      // Results: output tensors, captured buffers written directly, or the
      // second buffers of in-place updates.
      NSMutableArray<MPSGraphTensorData*>* res_data = [NSMutableArray arrayWithCapacity:targets_.size()];
      std::vector<id<MTLBuffer>> result_buf(targets_.size());
      std::vector<std::pair<void*, size_t>> staged_outputs;  // (host destination, target)
      for (size_t i = 0; i < targets_.size(); ++i) {
        Target& t = targets_[i];
        id<MTLBuffer> buf = nil;
        if (t.output >= 0) {
          void* host = outs[size_t(t.output)].raw_data();
          BufferRef r = find_buffer(host);
          if (r.buffer != nil && r.offset == 0) {
            buf = r.buffer;
          } else {
            if (t.staging == nil) t.staging = new_shared_buffer(nbytes_of(graph_.values[t.value].meta));
            buf = t.staging;
            staged_outputs.emplace_back(host, i);
          }
        } else {
          if (t.direct_capture >= 0) {
            BufferRef r = find_buffer(graph_.captures[size_t(t.direct_capture)].storage->data());
            // Never a buffer the run also reads (a step argument aliasing it).
            if (r.buffer != nil && r.offset == 0 && !read.count((__bridge const void*)r.buffer)) buf = r.buffer;
          }
          if (buf == nil) buf = find_buffer(t.second.raw_data()).buffer;
        }
        result_buf[i] = buf;
        [res_data addObject:[[MPSGraphTensorData alloc] initWithMTLBuffer:buf shape:t.shape dataType:t.type]];
      }

      MPSCommandBuffer* cb = [MPSCommandBuffer commandBufferFromCommandQueue:ctx.queue];
      program_->encode(cb, in_data, res_data);

      // New values into captured buffers (and repeated outputs), encoded
      // after the graph in the same command buffer: one submission per step.
      id<MTLBlitCommandEncoder> blit = nil;
      std::vector<std::tuple<void*, id<MTLBuffer>, size_t>> host_copies;
      auto copy = [&](id<MTLBuffer> src, void* dst, size_t n) {
        BufferRef d = find_buffer(dst);
        if (d.buffer == src) return;  // already computed in place
        if (d.buffer != nil && d.offset == 0) {
          if (blit == nil) blit = [cb blitCommandEncoder];
          [blit copyFromBuffer:src sourceOffset:0 toBuffer:d.buffer destinationOffset:0 size:blit_size(n)];
        } else {
          host_copies.emplace_back(dst, src, n);
        }
      };
      for (const auto& w : graph_.writebacks) {
        const size_t n = nbytes_of(graph_.values[w.value].meta);
        if (n == 0) continue;
        copy(result_buf[size_t(target_of_.at(w.value))], graph_.captures[size_t(w.capture)].storage->data(), n);
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const int v = graph_.outputs[i];
        const size_t n = nbytes_of(graph_.values[v].meta);
        if (n == 0) continue;
        const int t = target_of_.at(v);
        if (targets_[size_t(t)].output != int(i)) copy(result_buf[size_t(t)], outs[i].raw_data(), n);
      }
      if (blit != nil) [blit endEncoding];
      [cb commit];
      wait_and_check(cb, "compiled step");

      for (auto& [host, i] : staged_outputs)
        std::memcpy(host, result_buf[i].contents, nbytes_of(graph_.values[targets_[i].value].meta));
      for (auto& [dst, src, n] : host_copies) std::memcpy(dst, src.contents, n);
    });
    for (const auto& w : graph_.writebacks) graph_.captures[size_t(w.capture)].storage->bump_version();
    return outs;
  }

  std::unique_ptr<Program> program_;  // null when no result has elements
  std::vector<Slot> slots_;  // one per program input, in the program's input order
  std::vector<Draw> draws_;
  std::vector<Target> targets_;  // one per program result, in the program's result order
  std::unordered_map<int, int> target_of_;  // value id -> index into targets_
};

std::shared_ptr<graph::Executable> compile_metal(Graph g, std::vector<graph::RandomKeyFeed> rf) {
  checked_context();
  return std::make_shared<MetalExecutable>(std::move(g), std::move(rf));
}

struct Registrar {
  Registrar() {
    if (context()) graph::register_compiler(DeviceType::Metal, compile_metal);
  }
} registrar;

}  // namespace

}  // namespace lucid::metal
