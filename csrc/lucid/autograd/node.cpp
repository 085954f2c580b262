#include "lucid/autograd/node.h"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/dispatch.h"
#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"

namespace lucid::autograd {

static std::atomic<uint64_t> g_sequence_nr{0};

Node::Node() : sequence_nr(g_sequence_nr.fetch_add(1)) {}

SavedTensor::SavedTensor(const Tensor& t, bool keep_data, bool is_output) : meta_(t.meta()), keep_data_(keep_data) {
  if (keep_data) {
    data_ = t.detach();
    version_ = t.version();
    if (!is_output && t.requires_grad()) original_ = t;
  }
}

Tensor SavedTensor::unpack(const std::string& node_name, bool with_history) const {
  if (!keep_data_) {
    // Only the meta is needed (a shape for sum_to, a dtype for a cast).
    auto impl = std::make_shared<TensorImpl>();
    impl->meta = meta_;
    return Tensor(std::move(impl));
  }
  if (!data_.defined())
    fail<Error>("Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Specify retain_graph=True if you need to backward a second time.");
  if (data_.version() != version_)
    fail<Error>("one of the variables needed for gradient computation has been modified by an inplace operation: ",
                "the input of ", node_name, " (", meta_str(meta_), ") is at version ", data_.version(),
                "; expected version ", version_, " instead");
  return with_history && original_.defined() ? original_ : data_;
}

PrimitiveNode::PrimitiveNode(PrimitivePtr prim, const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& outputs)
    : prim_(std::move(prim)) {
  std::vector<bool> needs_grad(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    needs_grad[i] = inputs[i].requires_grad() && prim_->differentiable_input(int(i));
  for (size_t i = 0; i < inputs.size(); ++i) inputs_.emplace_back(inputs[i], prim_->saves_input(int(i), needs_grad));
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs_.emplace_back(outputs[i], prim_->saves_output(int(i)), /*is_output=*/true);
    output_metas_.push_back(outputs[i].meta());
  }
}

std::string PrimitiveNode::name() const { return prim_->name(); }

void PrimitiveNode::release_saved() {
  for (auto& s : inputs_) s.release();
  for (auto& s : outputs_) s.release();
}

std::vector<Tensor> PrimitiveNode::apply(std::vector<Tensor>&& grad_outputs) {
  const std::string nm = name();
  // A backward that records history (create_graph) differentiates through the
  // saved tensors too: inputs with their own history, outputs as outputs of
  // this node.
  const bool recording = GradMode::is_enabled();
  std::vector<Tensor> ins, outs;
  for (const auto& s : inputs_) ins.push_back(s.unpack(nm, recording));
  for (size_t i = 0; i < outputs_.size(); ++i) {
    Tensor o = outputs_[i].unpack(nm);
    if (recording && o.defined() && o.impl()->storage && is_floating(o.dtype())) {
      o = o.detach();
      o.impl()->requires_grad = true;
      o.impl()->grad_fn = shared_from_this();
      o.impl()->output_nr = uint32_t(i);
    }
    outs.push_back(o);
  }
  // Outputs that got no gradient contribute zeros; non-floating outputs
  // (MaxPool2d's indices) never carry one and stay undefined.
  for (size_t i = 0; i < grad_outputs.size(); ++i)
    if (!grad_outputs[i].defined() && is_floating(output_metas_[i].dtype))
      grad_outputs[i] = zeros(output_metas_[i].shape, output_metas_[i].dtype, output_metas_[i].device);
  std::vector<int> argnums;
  for (size_t i = 0; i < next_edges.size(); ++i)
    if (next_edges[i].node) argnums.push_back(int(i));
  std::vector<Tensor> grads = prim_->vjp(ins, outs, grad_outputs, argnums);
  std::vector<Tensor> result(next_edges.size());
  for (size_t k = 0; k < argnums.size(); ++k) {
    Tensor g = grads[k];
    const TensorMeta& m = inputs_[argnums[k]].meta();
    if (g.defined()) {
      LUCID_CHECK_T(Error, g.shape() == m.shape, "internal: gradient of ", nm, " input ", argnums[k], " has shape ",
                    shape_str(g.shape()), ", expected ", shape_str(m.shape));
      if (g.dtype() != m.dtype) g = cast(g, m.dtype);
    }
    result[argnums[k]] = g;
  }
  return result;
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grad_outputs) {
  Tensor g = std::move(grad_outputs[0]);
  Tensor leaf(leaf_);
  // A leaf that stopped requiring grad after the graph was built
  // (requires_grad_(False), detach_()) gets nothing, as in PyTorch.
  if (!g.defined() || !leaf.requires_grad()) return {};
  Tensor old = leaf.grad();
  if (!old.defined()) {
    // .grad takes the incoming gradient only when nothing else refers to it
    // (PyTorch's rule): a VJP may hand one tensor to several inputs (add),
    // and a later in-place accumulation into one leaf's .grad must not reach
    // another's (traced too: a detached handle would share the memory).
    // It must also be laid out as a fresh row-major tensor (a VJP may return
    // a view).
    const bool shared = g.impl_ptr().use_count() > 1 || g.is_view() || g.offset() != 0 ||
                        (!g.is_symbolic() && g.storage().use_count() > 1);
    if (shared || !g.is_contiguous()) g = contiguous_copy(g);
    leaf.set_grad(g);
  } else if (GradMode::is_enabled()) {
    leaf.set_grad(add(old, g));  // create_graph: a new .grad with history, as PyTorch's
  } else {
    // Accumulate in place, like PyTorch, so references to .grad stay valid.
    assign_data(old, add(old, g));
  }
  if (leaf_->grad_hooks) leaf_->grad_hooks->run_after_accumulate(leaf);
  return {};
}

void set_history(const Tensor& t, std::shared_ptr<Node> node, uint32_t output_nr) {
  TensorImpl* impl = t.impl();
  if (impl->retains_grad && impl->grad_fn != node) {
    if (impl->grad_fn) {
      auto& kept = impl->grad_fn->retained;
      kept.erase(std::remove_if(kept.begin(), kept.end(), [&](const auto& r) { return r.second.lock().get() == impl; }),
                 kept.end());
    }
    if (node) node->retained.push_back({output_nr, t.impl_ptr()});
  }
  impl->grad_fn = std::move(node);
  impl->output_nr = output_nr;
}

void rederive_view_history(const Tensor& view) {
  TensorImpl* v = view.impl();
  Tensor base(v->view_base);
  v->view_history_version = view.version();
  if (!base.requires_grad()) return;
  auto prim = std::make_shared<const ViewOfBase>(base.layout(), view.layout(), view.storage_numel());
  auto node = std::make_shared<PrimitiveNode>(prim, std::vector<Tensor>{base}, std::vector<Tensor>{view});
  node->next_edges.push_back(gradient_edge(base));
  v->requires_grad = true;
  set_history(view, node, 0);
}

void refresh_view_history(const Tensor& t) {
  const TensorImpl* v = t.impl();
  if (!v->view_base || v->view_history_version == t.version() || !v->view_base->requires_grad) return;
  if (v->view_in_grad_mode) return rederive_view_history(t);
  // A view made without grad mode has no history to rederive (PyTorch's
  // error whenever its history is asked for after a write to its memory).
  fail<Error>("A view was created in no_grad mode and its base or another view of its base has been modified "
              "inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is "
              "forbidden. You can clarify your code by moving both the view and the inplace either both inside the "
              "no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace "
              "to be tracked).");
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  refresh_view_history(t);
  if (!t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.impl()->output_nr};
  TensorImpl* impl = t.impl();
  // A view made without grad mode requires grad through its base only: no
  // gradient reaches it (PyTorch gives it no accumulator either).
  if (!impl->requires_grad) return {};
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

uint64_t GradHooks::add(uint32_t output_nr, GradHook fn) {
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  entries.push_back({id, output_nr, std::move(fn)});
  return id;
}

void GradHooks::remove(uint64_t id) {
  for (auto it = entries.begin(); it != entries.end(); ++it)
    if (it->id == id) {
      entries.erase(it);
      return;
    }
}

void GradHooks::run(uint32_t output_nr, Tensor& g) const {
  if (!g.defined()) return;
  // A copy: a hook may register or remove hooks.
  const std::vector<Entry> now = entries;
  for (const Entry& e : now) {
    if (e.output_nr != output_nr) continue;
    Tensor r = e.fn(g);
    if (!r.defined()) continue;
    LUCID_CHECK_T(Error, r.shape() == g.shape(), "hook has changed the size of the gradient: expected ",
                  shape_str(g.shape()), ", got ", shape_str(r.shape()));
    g = r.dtype() == g.dtype() ? r : cast(r, g.dtype());
  }
}

void GradHooks::run_after_accumulate(const Tensor& leaf) const {
  const std::vector<Entry> now = entries;
  for (const Entry& e : now)
    if (e.output_nr == kAfterAccumulate) e.fn(leaf);
}

uint64_t add_post_accumulate_grad_hook(const Tensor& leaf, GradHook fn) {
  LUCID_CHECK_T(Error, leaf.requires_grad(),
                "cannot register a hook on a tensor that doesn't require gradient");
  LUCID_CHECK_T(Error, leaf.is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  TensorImpl* impl = leaf.impl();
  if (!impl->grad_hooks) impl->grad_hooks = std::make_shared<GradHooks>();
  return impl->grad_hooks->add(GradHooks::kAfterAccumulate, std::move(fn));
}

uint64_t add_grad_hook(const Tensor& t, GradHook fn) {
  LUCID_CHECK_T(Error, t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  refresh_view_history(t);
  if (t.grad_fn()) return t.grad_fn()->hooks.add(t.impl()->output_nr, std::move(fn));
  TensorImpl* impl = t.impl();
  if (!impl->grad_hooks) impl->grad_hooks = std::make_shared<GradHooks>();
  return impl->grad_hooks->add(0, std::move(fn));
}

void remove_grad_hook(const Tensor& t, uint64_t id) {
  if (t.grad_fn()) t.grad_fn()->hooks.remove(id);
  if (t.impl()->grad_hooks) t.impl()->grad_hooks->remove(id);
}

void record_history(const PrimitivePtr& prim, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  if (!GradMode::is_enabled()) return;
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].requires_grad() && prim->differentiable_input(int(i))) any = true;
  if (!any) return;
  bool float_out = false;
  for (const auto& o : outputs) float_out |= is_floating(o.dtype());
  if (!float_out) return;
  auto node = std::make_shared<PrimitiveNode>(prim, inputs, outputs);
  for (size_t i = 0; i < inputs.size(); ++i)
    node->next_edges.push_back(prim->differentiable_input(int(i)) ? gradient_edge(inputs[i]) : Edge{});
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!is_floating(outputs[k].dtype())) continue;
    outputs[k].impl()->requires_grad = true;
    set_history(outputs[k], node, uint32_t(k));
  }
}

std::string display_name(const Node& n) {
  if (dynamic_cast<const AccumulateGrad*>(&n)) return "torch::autograd::AccumulateGrad";
  if (!dynamic_cast<const PrimitiveNode*>(&n)) return n.name();
  std::string out;
  bool upper = true;
  for (char ch : n.name()) {
    if (ch == '_' || ch == ' ' || ch == '.') {
      upper = true;
      continue;
    }
    out += upper ? char(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return out + "Backward0";
}

}  // namespace lucid::autograd
