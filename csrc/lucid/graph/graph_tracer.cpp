#include "lucid/graph/graph_tracer.h"

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/primitives.h"

namespace lucid::graph {

namespace {

// Whether `l` is every element of a storage of `n`, in row-major order.
bool covers_all(const Layout& l, int64_t n) {
  return l.offset == 0 && numel(l.shape) == n && is_contiguous(l.shape, l.strides);
}

}  // namespace

int GraphTracer::node(const PrimitivePtr& prim, const std::vector<int>& inputs, const TensorMeta& meta) {
  return graph_.add_node(prim, inputs, {meta})[0];
}

Tensor GraphTracer::new_value(int value) {
  const TensorMeta& m = graph_.values[value].meta;
  Tensor t = Tensor::symbolic(m, id(), value);
  Contents c;
  c.storage = t.storage();
  c.flat_meta = {{m.numel()}, m.dtype, m.device};
  c.whole = value;
  contents_.emplace(c.storage.get(), std::move(c));
  return t;
}

Tensor GraphTracer::add_input(const TensorMeta& meta) {
  const int v = graph_.add_value(meta, ValueKind::Input, -1, int(graph_.inputs.size()));
  graph_.inputs.push_back(v);
  return new_value(v);
}

Tensor GraphTracer::add_feed(const TensorMeta& meta) {
  const int v = graph_.add_value(meta, ValueKind::Feed, -1, int(graph_.feeds.size()));
  graph_.feeds.push_back(v);
  return new_value(v);
}

Tensor GraphTracer::random_key(uint64_t count) {
  Tensor key = add_feed({{2}, DType::Int64, Device{}});
  random_key_feeds_.push_back({int(graph_.feeds.size()) - 1, count});
  return key;
}

void GraphTracer::add_output(const Tensor& t) { graph_.outputs.push_back(value_of(t)); }

GraphTracer::Contents& GraphTracer::contents_of(const Tensor& t) {
  const std::shared_ptr<Storage>& storage = t.storage();
  LUCID_CHECK_T(Error, storage != nullptr, "internal: a tensor without memory was used in a trace");
  auto it = contents_.find(storage.get());
  if (it != contents_.end()) {
    LUCID_CHECK_T(NotImplementedError, it->second.flat_meta.dtype == t.dtype(),
                  "a compiled step cannot read one memory as two dtypes (", dtype_name(it->second.flat_meta.dtype),
                  " and ", dtype_name(t.dtype()), ")");
    if (!t.is_symbolic()) add_owner(it->second, t);
    return it->second;
  }
  LUCID_CHECK_T(Error, !t.is_symbolic(), "internal: a traced tensor whose memory the trace does not know");
  // Concrete memory: captured whole, bound to the storage.
  Contents c;
  c.storage = storage;
  c.flat_meta = {{t.storage_numel()}, t.dtype(), t.device()};
  c.capture = int(graph_.captures.size());
  c.flat = graph_.add_value(c.flat_meta, ValueKind::Capture, -1, c.capture);
  graph_.captures.push_back({c.flat, storage, {t.impl_ptr()}});
  storage_of_capture_.push_back(storage.get());
  return contents_.emplace(storage.get(), std::move(c)).first->second;
}

int GraphTracer::flat_value(Contents& c) {
  if (c.flat < 0) c.flat = node(std::make_shared<const Reshape>(c.flat_meta.shape), {c.whole}, c.flat_meta);
  return c.flat;
}

int GraphTracer::read(Contents& c, const Layout& layout, const TensorMeta& meta) {
  for (const auto& [l, v] : c.reads)
    if (l == layout) return v;
  int v;
  if (covers_all(layout, c.flat_meta.numel())) {
    const int src = c.whole >= 0 ? c.whole : flat_value(c);
    v = graph_.values[src].meta.shape == meta.shape ? src : node(std::make_shared<const Reshape>(meta.shape), {src}, meta);
  } else {
    v = node(std::make_shared<const AsStrided>(layout), {flat_value(c)}, meta);
  }
  c.reads.push_back({layout, v});
  return v;
}

void GraphTracer::write(Contents& c, const Layout& layout, int value) {
  if (covers_all(layout, c.flat_meta.numel())) {
    c.whole = value;
    c.flat = -1;
  } else {
    c.flat = node(std::make_shared<const AsStridedScatter>(layout, false), {flat_value(c), value}, c.flat_meta);
    c.whole = -1;
  }
  ++c.writes;
  c.reads.clear();
  c.reads.push_back({layout, value});
  if (c.capture < 0) {
    c.storage->bump_version();  // a traced value's memory: autograd checks saved values against it
    return;
  }
  const int flat = flat_value(c);
  for (auto& w : graph_.writebacks)
    if (w.capture == c.capture) {
      w.value = flat;
      return;
    }
  graph_.writebacks.push_back({c.capture, flat});
}

int GraphTracer::value_of(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (t.is_symbolic() && impl->trace_id != id())
    fail<Error>("a tensor from another compiled step's trace was used in this one");
  Contents& c = contents_of(t);
  // A traced tensor's value stands until its memory is written through an alias.
  if (t.is_symbolic() && impl->value_version == c.writes) return int(impl->value_id);
  const int v = read(c, t.layout(), t.meta());
  if (t.is_symbolic()) {
    impl->value_id = v;
    impl->value_version = c.writes;
  }
  return v;
}

void GraphTracer::bind_per_call(const Tensor& t) {
  LUCID_CHECK_T(Error, !t.is_symbolic(), "bind_per_call: a traced tensor has no buffer to bind");
  LUCID_CHECK_T(Error, covers_all(t.layout(), t.storage_numel()),
                "bind_per_call: the tensor must be all of its memory, in row-major order");
  Contents& c = contents_of(t);
  Capture& cap = graph_.captures[c.capture];
  LUCID_CHECK_T(Error, !cap.bound_per_call, "bind_per_call: ", t.str(), " is already bound per call");
  cap.bound_per_call = true;
}

std::vector<Tensor> GraphTracer::record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                        const std::vector<TensorMeta>& output_metas) {
  std::vector<int> ins;
  ins.reserve(inputs.size());
  for (const auto& t : inputs) ins.push_back(value_of(t));
  const std::vector<int> outs = graph_.add_node(prim, ins, output_metas);
  if (prim->is_view()) {
    // The output shares the input's memory, as it does eagerly.
    const std::optional<Layout> layout = prim->view_layout(inputs[0].layout());
    LUCID_CHECK_T(Error, layout.has_value(), "internal: ", prim->name(), " cannot be a view of a tensor laid out with "
                  "strides ", shape_str(inputs[0].strides()));
    Tensor v = Tensor::make_view(inputs[0], *layout);
    TensorImpl* impl = v.impl();
    impl->trace_id = id();
    impl->value_id = outs[0];
    impl->value_version = contents_of(inputs[0]).writes;
    impl->view_in_grad_mode = autograd::GradMode::is_enabled();
    return {v};
  }
  std::vector<Tensor> result;
  result.reserve(outs.size());
  for (int v : outs) result.push_back(new_value(v));
  return result;
}

void GraphTracer::assign(const Tensor& target, const Tensor& value) {
  const int v = value_of(value);
  Contents& c = contents_of(target);
  write(c, target.layout(), v);
  if (target.is_symbolic()) {
    target.impl()->value_id = v;
    target.impl()->value_version = c.writes;
  }
  if (!target.is_symbolic()) add_owner(c, target);
}

void GraphTracer::own_if_captured(const Tensor& t) {
  if (!t.defined() || t.is_symbolic() || !t.storage()) return;
  auto it = contents_.find(t.storage().get());
  if (it != contents_.end()) add_owner(it->second, t);
}

void GraphTracer::add_owner(const Contents& c, const Tensor& t) {
  if (c.capture < 0) return;
  Capture& cap = graph_.captures[c.capture];
  if (cap.bound_per_call) return;
  const TensorImpl* impl = t.impl_ptr().get();
  for (const auto& o : cap.owners)
    if (o.lock().get() == impl) return;
  cap.owners.push_back(t.impl_ptr());
}

void GraphTracer::guard_writebacks_since(const std::vector<Writeback>& before, const Tensor& cond) {
  const int cv = value_of(cond);
  for (auto& w : graph_.writebacks) {
    int old = graph_.captures[w.capture].value;
    bool unchanged = false;
    for (const auto& b : before)
      if (b.capture == w.capture) {
        old = b.value;
        unchanged = b.value == w.value;
      }
    if (unchanged) continue;
    const TensorMeta m = graph_.values[w.value].meta;
    w.value = node(std::make_shared<const Where>(), {cv, old, w.value}, m);
    Contents& c = contents_.at(storage_of_capture_[w.capture]);
    c.flat = w.value;
    c.whole = -1;
    ++c.writes;
    c.reads.clear();
  }
}

Graph GraphTracer::take_graph() {
  contents_.clear();
  storage_of_capture_.clear();
  return std::move(graph_);
}

}  // namespace lucid::graph
