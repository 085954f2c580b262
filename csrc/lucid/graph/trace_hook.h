#pragma once
// The hook through which ops reach an active trace. While a Tracer is
// current on this thread, every primitive call is recorded by it (returning
// symbolic tensors) instead of running a kernel, and in-place writes are
// recorded as assignments. The concrete tracer lives in graph/graph_tracer.h.
#include <cstdint>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid::graph {

class Tracer {
 public:
  Tracer();
  virtual ~Tracer() = default;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  static Tracer* current();
  static void set_current(Tracer* t);
  uint64_t id() const { return id_; }

  virtual std::vector<Tensor> record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                     const std::vector<TensorMeta>& output_metas) = 0;
  // `target` takes `value` as its new contents (an in-place write).
  virtual void assign(const Tensor& target, const Tensor& value) = 0;
  // An int64 [seed, offset] key for `count` random draws: a feed refreshed on
  // every run, so each compiled step draws new numbers.
  virtual Tensor random_key(uint64_t count) = 0;

 private:
  uint64_t id_;
};

// Makes a tracer current for a scope (restoring the previous one).
class TraceScope {
 public:
  explicit TraceScope(Tracer* t) : prev_(Tracer::current()) { Tracer::set_current(t); }
  ~TraceScope() { Tracer::set_current(prev_); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Tracer* prev_;
};

}  // namespace lucid::graph
