// Eager kernels of the metal device. Each op runs as a cached single-op
// MPSGraph (keyed by primitive, attributes, shapes and dtypes), compiled once
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

void put_meta(std::string& key, const TensorMeta& m) {
  key += dtype_name(m.dtype);
  key += '[';
  for (int64_t d : m.shape) {
    key += std::to_string(d);
    key += ',';
  }
  key += ']';
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
  bool any_output = false;
  for (const auto& m : out_metas) any_output |= m.numel() > 0;
  if (!any_output) return;
  check_indices(p, in);

  std::string key = primitive_key(p);
  key += '|';
  for (const auto& m : in_metas) put_meta(key, m);
  key += "->";
  for (const auto& m : out_metas) put_meta(key, m);

  ProgramCache& pc = cache();
  std::lock_guard<std::mutex> lock(pc.mu);
  with_pool([&] {
    Context& ctx = checked_context();
    Program& prog = pc.get(key, [&] {
      MPSGraph* g = [MPSGraph new];
      std::vector<MPSGraphTensor*> args, placeholders;
      for (const auto& m : in_metas) {
        MPSGraphTensor* t = nil;
        if (m.numel() > 0) {
          t = [g placeholderWithShape:mps_shape(m.shape) dataType:mps_dtype(m.dtype) name:nil];
          placeholders.push_back(t);
        }
        args.push_back(t);
      }
      std::vector<MPSGraphTensor*> results = emit_primitive(g, p, args, in_metas, out_metas), targets;
      for (size_t k = 0; k < results.size(); ++k) {
        if (results[k] == nil) continue;
        // A result that is an input as-is (a reshape) still needs an op to
        // write the output buffer.
        bool is_input = false;
        for (MPSGraphTensor* t : placeholders) is_input |= t == results[k];
        targets.push_back(is_input ? [g identityWithTensor:results[k] name:nil] : results[k]);
      }
      return std::make_unique<Program>(g, placeholders, targets);
    });

    NSMutableArray<MPSGraphTensorData*>* inputs = [NSMutableArray array];
    std::vector<Bound> keep;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in_metas[i].numel() == 0) continue;
      keep.push_back(bind(in[i].data, in_metas[i], true));
      [inputs addObject:keep.back().data];
    }
    NSMutableArray<MPSGraphTensorData*>* results = [NSMutableArray array];
    std::vector<std::pair<size_t, Bound>> outputs;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out_metas[k].numel() == 0) continue;
      outputs.emplace_back(k, bind(out[k].data, out_metas[k], false));
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
void full_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const TensorMeta& m = *out[0].meta;
  mps_dtype(m.dtype, "full");
  const size_t es = itemsize(m.dtype);
  unsigned char value[8] = {};
  write_value(value, m.dtype, static_cast<const Full&>(p).value);
  char* dst = static_cast<char*>(out[0].data);
  const size_t total = nbytes_of(m);
  if (total == 0) return;
  std::memcpy(dst, value, es);
  for (size_t filled = es; filled < total; filled *= 2)  // doubling copies of the filled prefix
    std::memcpy(dst + filled, dst, std::min(filled, total - filled));
}

void arange_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const auto& a = static_cast<const Arange&>(p);
  const TensorMeta& m = *out[0].meta;
  mps_dtype(m.dtype, "arange");
  const size_t es = itemsize(m.dtype);
  char* dst = static_cast<char*>(out[0].data);
  for (int64_t i = 0; i < m.numel(); ++i) write_value(dst + size_t(i) * es, m.dtype, a.start + double(i) * a.step);
}

// The same Philox stream as the CPU kernel: identical numbers on every device.
void random_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& r = static_cast<const Random&>(p);
  const TensorMeta& m = *out[0].meta;
  mps_dtype(m.dtype, r.name().c_str());
  const int64_t* key = static_cast<const int64_t*>(in[0].data);
  fill_random(out[0].data, m.dtype, r.dist, uint64_t(key[0]), uint64_t(key[1]), m.numel());
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

struct Registrar {
  Registrar() {
    if (!context()) return;  // no device: the kernel table keeps no metal entries
    for (OpKind k : {OpKind::Unary, OpKind::Binary, OpKind::Where, OpKind::Cast, OpKind::Reduce, OpKind::ArgReduce,
                     OpKind::Matmul, OpKind::Reshape, OpKind::Permute, OpKind::Broadcast, OpKind::Slice,
                     OpKind::SliceScatter, OpKind::Concat, OpKind::Gather, OpKind::ScatterAdd, OpKind::IndexSelect,
                     OpKind::IndexAdd, OpKind::Softmax, OpKind::Im2Col, OpKind::Col2Im, OpKind::MaxPool2d,
                     OpKind::MaxPool2dBackward, OpKind::LayerNorm, OpKind::LayerNormBackward,
                     OpKind::SoftmaxBackward})
      register_kernel(k, DeviceType::Metal, graph_kernel);
    register_kernel(OpKind::Full, DeviceType::Metal, full_kernel);
    register_kernel(OpKind::Arange, DeviceType::Metal, arange_kernel);
    register_kernel(OpKind::Random, DeviceType::Metal, random_kernel);
    register_kernel(OpKind::Copy, DeviceType::Metal, copy_kernel);
  }
} registrar;

}  // namespace

}  // namespace lucid::metal
