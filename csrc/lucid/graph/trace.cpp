#include "lucid/graph/trace.h"

#include "lucid/ops/primitives.h"

namespace lucid::graph {

Tensor GraphTracer::symbolic(int value) { return Tensor::symbolic(graph_.values[value].meta, id(), value); }

Tensor GraphTracer::add_input(const TensorMeta& meta) {
  const int v = graph_.add_value(meta, ValueKind::Input, -1, int(graph_.inputs.size()));
  graph_.inputs.push_back(v);
  return symbolic(v);
}

Tensor GraphTracer::add_feed(const TensorMeta& meta) {
  const int v = graph_.add_value(meta, ValueKind::Feed, -1, int(graph_.feeds.size()));
  graph_.feeds.push_back(v);
  return symbolic(v);
}

Tensor GraphTracer::random_key(uint64_t count) {
  Tensor key = add_feed({{2}, DType::Int64, Device{}});
  random_key_feeds_.push_back({int(graph_.feeds.size()) - 1, count});
  return key;
}

void GraphTracer::add_output(const Tensor& t) { graph_.outputs.push_back(value_of(t)); }

int GraphTracer::capture(const Tensor& t) {
  const Storage* s = t.storage().get();
  auto it = capture_of_.find(s);
  if (it != capture_of_.end()) return it->second;
  // Captured at the storage's full extent; views of it are reshapes.
  const int idx = int(graph_.captures.size());
  const int v = graph_.add_value(t.meta(), ValueKind::Capture, -1, idx);
  graph_.captures.push_back({v, t.storage(), t.impl_ptr()});
  capture_of_[s] = idx;
  current_[s] = v;
  return idx;
}

void GraphTracer::bind_per_call(const Tensor& t) {
  LUCID_CHECK_T(Error, !t.is_symbolic(), "bind_per_call: a traced tensor has no buffer to bind");
  Capture& c = graph_.captures[capture(t)];
  LUCID_CHECK_T(Error, !c.bound_per_call, "bind_per_call: ", t.str(), " is already bound per call");
  c.bound_per_call = true;
}

int GraphTracer::value_of(const Tensor& t) {
  if (t.is_symbolic()) {
    if (t.impl()->trace_id != id())
      fail<Error>("a tensor from another compiled step's trace was used in this one");
    return int(t.impl()->value_id);
  }
  const int cap = capture(t);
  int v = current_[t.storage().get()];
  (void)cap;
  if (graph_.values[v].meta.shape != t.shape()) {
    // Another view (reshape) of the same storage.
    v = graph_.add_node(std::make_shared<const Reshape>(t.shape()), {v}, {t.meta()})[0];
  }
  return v;
}

std::vector<Tensor> GraphTracer::record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                        const std::vector<TensorMeta>& output_metas) {
  std::vector<int> ins;
  ins.reserve(inputs.size());
  for (const auto& t : inputs) ins.push_back(value_of(t));
  std::vector<Tensor> outs;
  for (int v : graph_.add_node(prim, ins, output_metas)) outs.push_back(symbolic(v));
  return outs;
}

void GraphTracer::assign(const Tensor& target, const Tensor& value) {
  int v = value_of(value);
  if (target.is_symbolic()) {
    // Rebind the traced handle: later reads of `target` see the new value.
    target.impl()->value_id = v;
    return;
  }
  const int cap = capture(target);
  Capture& c = graph_.captures[cap];
  // The tensor written back owns the buffer: the buffer may first have been
  // seen through a temporary alias (a detached handle), whose expiry would
  // hide a later `target.data = ...` from bindings_valid().
  if (!c.bound_per_call) c.owner = target.impl_ptr();
  const TensorMeta& base = graph_.values[c.value].meta;
  if (base.shape != target.shape())
    v = graph_.add_node(std::make_shared<const Reshape>(base.shape), {v}, {base})[0];
  current_[target.storage().get()] = v;
  for (auto& w : graph_.writebacks)
    if (w.capture == cap) {
      w.value = v;
      return;
    }
  graph_.writebacks.push_back({cap, v});
}

void GraphTracer::guard_writebacks_since(const std::vector<Writeback>& before, const Tensor& cond) {
  const int c = value_of(cond);
  for (auto& w : graph_.writebacks) {
    int old = graph_.captures[w.capture].value;
    bool unchanged = false;
    for (const auto& b : before)
      if (b.capture == w.capture) {
        old = b.value;
        unchanged = b.value == w.value;
      }
    if (unchanged) continue;
    const TensorMeta& m = graph_.values[w.value].meta;
    const int guarded = graph_.add_node(std::make_shared<const Where>(), {c, old, w.value}, {m})[0];
    w.value = guarded;
    current_[graph_.captures[w.capture].storage.get()] = guarded;
  }
}

Graph GraphTracer::take_graph() {
  capture_of_.clear();
  current_.clear();
  return std::move(graph_);
}

}  // namespace lucid::graph
