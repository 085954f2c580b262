// Eager kernels of the metal device. Each op runs as a cached single-op
// MPSGraph (its plan from lower.h, which is also its cache key), compiled once
// into an MPSGraphExecutable and encoded into one command buffer per call;
// results stay in the device's buffers. Creation ops (full, arange, the
// Philox draws) write the shared buffer directly from the host, and copies
// are blits. Every call waits for the GPU before returning, so the host may
// read any tensor's memory (numpy(), item()) at any time.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "lucid/backend/metal/context.h"
#include "lucid/backend/metal/lower.h"
#include "lucid/backend/metal/mps_ops.h"
#include "lucid/backend/metal/program.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::metal {

namespace {

constexpr size_t kCacheCapacity = 1024;

// Least-recently-used single-op programs. Eager ops on the metal device are
// serialized by `mu` (one command queue, one cache).
struct ProgramCache {
  std::mutex mu;
  std::list<std::string> order;  // most recent first
  std::unordered_map<std::string, std::pair<std::unique_ptr<Program>, std::list<std::string>::iterator>> entries;

  template <class Build>
  Program& get(const std::string& key, Build&& build) {
    auto it = entries.find(key);
    if (it != entries.end()) {
      order.splice(order.begin(), order, it->second.second);
      return *it->second.first;
    }
    std::unique_ptr<Program> p = build();
    if (entries.size() >= kCacheCapacity) {
      entries.erase(order.back());
      order.pop_back();
    }
    order.push_front(key);
    auto& e = entries[key];
    e.first = std::move(p);
    e.second = order.begin();
    return *e.first;
  }
};

ProgramCache& cache() {
  static ProgramCache* c = new ProgramCache();  // outlives static destruction, like the context
  return *c;
}

size_t nbytes_of(const TensorMeta& m) { return size_t(m.numel()) * itemsize(m.dtype); }

// Copies of `n` bytes between buffers; blits need multiples of 4 on macOS,
// and every buffer here is a whole number of 16 bytes long.
size_t blit_size(size_t n) { return (n + 3) / 4 * 4; }

// A tensor's memory as tensor data: its own MTLBuffer when the allocator made
// it, else a staging copy (written back after the run for outputs).
struct Bound {
  MPSGraphTensorData* data = nil;
  id<MTLBuffer> staging = nil;
};

Bound bind(const void* ptr, const TensorMeta& m, bool copy_in) {
  Bound b;
  BufferRef ref = find_buffer(ptr);
  id<MTLBuffer> buf = ref.buffer;
  if (buf == nil || ref.offset != 0) {
    b.staging = new_shared_buffer(nbytes_of(m));
    if (copy_in) std::memcpy(b.staging.contents, ptr, nbytes_of(m));
    buf = b.staging;
  }
  b.data = [[MPSGraphTensorData alloc] initWithMTLBuffer:buf shape:mps_shape(m.shape) dataType:mps_dtype(m.dtype)];
  return b;
}

void graph_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  std::vector<TensorMeta> in_metas, out_metas;
  for (const auto& a : in) in_metas.push_back(*a.meta);
  for (const auto& a : out) out_metas.push_back(*a.meta);
  const std::string name = p.name();
  for (const auto& m : in_metas) mps_dtype(m.dtype, name.c_str());
  for (const auto& m : out_metas) mps_dtype(m.dtype, name.c_str());
  // The plan is every decision; its key is the program cache key.
  const EagerPlan ep = plan_eager(p, in_metas, out_metas);
  if (ep.empty()) return;
  check_indices(p, in);
  check_divisors(p, in);
  const std::string key = ep.key();

  ProgramCache& pc = cache();
  std::lock_guard<std::mutex> lock(pc.mu);
  with_pool([&] {
    Context& ctx = checked_context();
    Program& prog = pc.get(key, [&] {
      BuiltGraph bg = build_graph(ep.plan, name.c_str());
      return std::make_unique<Program>(bg.graph, bg.inputs, bg.targets);
    });
    NSMutableArray<MPSGraphTensorData*>* inputs = [NSMutableArray array];
    std::vector<Bound> keep;
    for (int i : ep.input_of_placeholder) {
      keep.push_back(bind(in[size_t(i)].data, in_metas[size_t(i)], true));
      [inputs addObject:keep.back().data];
    }
    NSMutableArray<MPSGraphTensorData*>* results = [NSMutableArray array];
    std::vector<std::pair<size_t, Bound>> outputs;
    for (int k : ep.output_of_target) {
      outputs.emplace_back(size_t(k), bind(out[size_t(k)].data, out_metas[size_t(k)], false));
      [results addObject:outputs.back().second.data];
    }
    MPSCommandBuffer* cb = [MPSCommandBuffer commandBufferFromCommandQueue:ctx.queue];
    prog.encode(cb, inputs, results);
    [cb commit];
    wait_and_check(cb, name);
    for (auto& [k, b] : outputs)
      if (b.staging != nil) std::memcpy(out[k].data, b.staging.contents, nbytes_of(out_metas[k]));
  });
}

// ------------------------------------------------------- host-side kernels
// Creation ops have no inputs to read: the host writes the shared buffer.
void host_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  mps_dtype(out[0].meta->dtype, p.name().c_str());
  fill_host(p, in, out[0].data, *out[0].meta);
}

void copy_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const TensorMeta& m = *out[0].meta;
  mps_dtype(m.dtype, "copy");
  const size_t n = nbytes_of(m);
  if (n == 0) return;
  BufferRef src = find_buffer(in[0].data), dst = find_buffer(out[0].data);
  if (src.buffer == nil || dst.buffer == nil || src.offset != 0 || dst.offset != 0) {
    std::memcpy(out[0].data, in[0].data, n);
    return;
  }
  std::lock_guard<std::mutex> lock(cache().mu);
  with_pool([&] {
    Context& ctx = checked_context();
    id<MTLCommandBuffer> cb = [ctx.queue commandBuffer];
    id<MTLBlitCommandEncoder> blit = [cb blitCommandEncoder];
    [blit copyFromBuffer:src.buffer sourceOffset:0 toBuffer:dst.buffer destinationOffset:0 size:blit_size(n)];
    [blit endEncoding];
    [cb commit];
    wait_and_check(cb, "copy");
  });
}

// Copies between layouts (strided operands made row-major, writes into
// views). Eager kernels wait for the GPU before returning and buffers are
// shared with the host, so the host copies in place.
void strided_copy(void* dst, const Layout& dl, const void* src, const Layout& sl, DType dtype) {
  const size_t es = itemsize(dtype);
  const int64_t n = numel(dl.shape);
  std::vector<int64_t> idx(dl.shape.size(), 0);
  int64_t d = dl.offset, s = sl.offset;
  for (int64_t p = 0; p < n; ++p) {
    std::memcpy(static_cast<char*>(dst) + d * int64_t(es), static_cast<const char*>(src) + s * int64_t(es), es);
    for (int k = int(idx.size()) - 1; k >= 0; --k) {
      d += dl.strides[size_t(k)];
      s += sl.strides[size_t(k)];
      if (++idx[size_t(k)] < dl.shape[size_t(k)]) break;
      d -= dl.strides[size_t(k)] * dl.shape[size_t(k)];
      s -= sl.strides[size_t(k)] * sl.shape[size_t(k)];
      idx[size_t(k)] = 0;
    }
  }
}

// One kernel per kind the lowering table gives a Metal form (lower.h).
struct Registrar {
  Registrar() {
    if (!context()) return;  // no device: the kernel table keeps no metal entries
    register_strided_copy(DeviceType::Metal, strided_copy);
    for (int k = 0; k < int(OpKind::Count); ++k) {
      switch (lowering_of(OpKind(k))) {
        case Lowering::Graph: register_kernel(OpKind(k), DeviceType::Metal, graph_kernel); break;
        case Lowering::HostFill: register_kernel(OpKind(k), DeviceType::Metal, host_kernel); break;
        case Lowering::Blit: register_kernel(OpKind(k), DeviceType::Metal, copy_kernel); break;
        case Lowering::None: break;
      }
    }
  }
} registrar;

}  // namespace

}  // namespace lucid::metal
