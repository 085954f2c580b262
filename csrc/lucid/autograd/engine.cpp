// Backward: a dependency-counted walk of the tape from the roots, in
// decreasing creation order among ready nodes (PyTorch's order), summing the
// gradients that reach each node before calling it.
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/core/profiler.h"
#include "lucid/ops/ops.h"

namespace lucid::autograd {

namespace {

struct ByCreationDesc {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

void accumulate(std::vector<Tensor>& slot_list, uint32_t slot, const Tensor& g) {
  if (!g.defined()) return;
  Tensor& s = slot_list[slot];
  s = s.defined() ? add(s, g) : g;
}

// Anomaly mode: PyTorch's error for a node whose gradient has a NaN
// (concrete values only: a traced backward has none to read).
void check_no_nan(const Node& n, const std::vector<Tensor>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& g = out[i];
    if (!g.defined() || g.is_symbolic() || !is_floating(g.dtype()) || g.numel() == 0) continue;
    NoGradGuard no_grad;
    const Tensor found = to_device(any(isnan(g)), Device{});  // read on the host (a sync on a device)
    if (*static_cast<const bool*>(found.raw_data("anomaly check")))
      fail<Error>("Function '", display_name(n), "' returned nan values in its ", i, "th output.");
  }
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                 bool retain_graph, const std::vector<Tensor>& inputs, bool allow_unused,
                                 bool create_graph) {
  LUCID_CHECK_T(Error, roots.size() == grad_roots.size(), "got ", roots.size(), " tensors and ", grad_roots.size(),
                " gradients");
  std::vector<Edge> root_edges;
  std::vector<Tensor> root_grads = grad_roots;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    // (A view made without grad mode requires grad but has no edge.)
    Edge edge = gradient_edge(r);
    if (!r.requires_grad() || !edge.node)
      fail<Error>("element ", i, " of tensors does not require grad and does not have a grad_fn");
    Tensor& g = root_grads[i];
    LUCID_CHECK_T(Error, g.defined(), "backward: no gradient given for element ", i, " of tensors");
    if (g.shape() != r.shape())
      fail<Error>("Mismatch in shape: grad_output[", i, "] has a shape of ", shape_str(g.shape()), " and output[", i,
                  "] has a shape of ", shape_str(r.shape()), ".");
    if (g.dtype() != r.dtype()) g = cast(g, r.dtype());  // as PyTorch's engine does
    root_edges.push_back(std::move(edge));
  }

  // Dependencies: how many edges point at each node.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;
  {
    std::vector<Node*> stack;
    for (const auto& e : root_edges)
      if (alive.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const auto& e : n->next_edges) {
        if (!e.node) continue;
        ++deps[e.node.get()];
        if (alive.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
      }
    }
  }

  // When gradients of `inputs` are requested, capture them at their edges
  // instead of accumulating into leaves.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::vector<Tensor> captured(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    LUCID_CHECK_T(Error, t.requires_grad(), "grad: input ", i, " does not require grad");
    Edge e = gradient_edge(t);
    if (e.node) captures[e.node.get()].push_back({e.input_nr, i});  // else unused
  }
  const bool accumulate_leaves = inputs.empty();

  // grad() runs only the nodes on a path to an input (PyTorch's exec_info):
  // the others are neither run nor released, their hooks not called.
  std::unordered_set<Node*> on_path;
  if (!accumulate_leaves) {
    std::unordered_map<Node*, bool> reaches;  // a captured node, itself included
    std::vector<std::pair<Node*, size_t>> stack;  // depth-first, with the next edge to visit
    for (const auto& e : root_edges)
      if (reaches.emplace(e.node.get(), false).second) stack.push_back({e.node.get(), 0});
    while (!stack.empty()) {
      Node* n = stack.back().first;
      const size_t i = stack.back().second++;
      if (i < n->next_edges.size()) {
        Node* child = n->next_edges[i].node.get();
        if (child && reaches.emplace(child, false).second) stack.push_back({child, 0});
        continue;
      }
      bool leads = false;
      for (const auto& e : n->next_edges) leads |= e.node && reaches[e.node.get()];
      if (leads) on_path.insert(n);
      reaches[n] = leads || captures.count(n) > 0;
      stack.pop_back();
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto buffer_for = [&](Node* n) -> std::vector<Tensor>& {
    auto it = buffers.find(n);
    if (it == buffers.end()) it = buffers.emplace(n, std::vector<Tensor>(n->num_outputs())).first;
    return it->second;
  };
  for (size_t i = 0; i < root_edges.size(); ++i)
    accumulate(buffer_for(root_edges[i].node.get()), root_edges[i].input_nr, root_grads[i]);

  std::priority_queue<Node*, std::vector<Node*>, ByCreationDesc> ready;
  {
    std::unordered_set<Node*> seen;
    for (const auto& e : root_edges)
      if (deps[e.node.get()] == 0 && seen.insert(e.node.get()).second) ready.push(e.node.get());
  }

  GradModeGuard recording(create_graph);  // without create_graph the backward pass records no history
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    const bool run = accumulate_leaves || on_path.count(n) > 0;
    if (!run && !captures.count(n)) continue;  // off every path to an input: so are the nodes after it
    std::vector<Tensor> grads = std::move(buffer_for(n));
    buffers.erase(n);

    // Tensor hooks first: retain_grad, grad() and the node see their results.
    const auto* acc = dynamic_cast<AccumulateGrad*>(n);
    if (!n->hooks.entries.empty())
      for (uint32_t nr = 0; nr < grads.size(); ++nr) n->hooks.run(nr, grads[nr]);
    if (acc && acc->leaf()->grad_hooks) acc->leaf()->grad_hooks->run(0, grads[0]);

    // Retained grads accumulate, out of place, as PyTorch's retain_grad hook
    // (autograd.grad too).
    for (auto& [nr, weak] : n->retained) {
      auto impl = weak.lock();
      if (!impl || !grads[nr].defined()) continue;
      impl->grad = (impl->grad ? add(Tensor(impl->grad), grads[nr]) : contiguous_copy(grads[nr])).impl_ptr();
    }

    auto cap = captures.find(n);
    if (cap != captures.end()) {
      for (auto [nr, idx] : cap->second) captured[idx] = grads[nr];
    }
    std::vector<Tensor> out;
    if (run) {
      bool any = false;
      for (const auto& g : grads) any |= g.defined();
      if (any) {
        profiler::Scope profiled(profiler::enabled() ? "autograd::engine::evaluate_function: " + display_name(*n) : "");
        out = n->apply(std::move(grads));
      }
      if (AnomalyMode::should_check_nan()) check_no_nan(*n, out);
      if (!retain_graph) n->release_saved();
    }
    for (size_t i = 0; i < n->next_edges.size() && run; ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.node) continue;
      if (i < out.size()) accumulate(buffer_for(e.node.get()), e.input_nr, out[i]);
      if (--deps[e.node.get()] == 0) ready.push(e.node.get());
    }
  }

  if (!inputs.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!captured[i].defined() && !allow_unused)
        fail<Error>("One of the differentiated Tensors appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior.");
  }
  return captured;
}

}  // namespace lucid::autograd
