#include "lucid/graph/passes.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "lucid/autograd/grad_mode.h"
#include "lucid/graph/graph_tracer.h"
#include "lucid/ops/dispatch.h"
#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"

namespace lucid::graph {

namespace {

// Replaces every use of value `from` by value `to`.
void replace_uses(Graph& g, const std::unordered_map<int, int>& repl) {
  if (repl.empty()) return;
  auto r = [&](int v) {
    for (auto it = repl.find(v); it != repl.end(); it = repl.find(v)) v = it->second;
    return v;
  };
  for (auto& n : g.nodes)
    for (auto& i : n.inputs) i = r(i);
  for (auto& o : g.outputs) o = r(o);
  for (auto& w : g.writebacks) w.value = r(w.value);
}

void renumber_producers(Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t k = 0; k < g.nodes[i].outputs.size(); ++k) {
      g.values[g.nodes[i].outputs[k]].producer = int(i);
      g.values[g.nodes[i].outputs[k]].index = int(k);
    }
}

}  // namespace

void eliminate_dead_code(Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (int o : g.outputs) live[o] = true;
  for (const auto& w : g.writebacks) live[w.value] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool any = false;
    for (int o : n.outputs) any |= live[o];
    if (!any) continue;
    keep[i] = true;
    for (int in : n.inputs) live[in] = true;
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) nodes.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(nodes);
  renumber_producers(g);
}

void eliminate_common_subexpressions(Graph& g) {
  struct Key {
    const Primitive* prim;
    const std::vector<int>* inputs;
  };
  std::unordered_map<size_t, std::vector<int>> seen;  // hash -> node indices
  std::unordered_map<int, int> repl;
  std::vector<Node> nodes;
  auto resolve = [&](int v) {
    for (auto it = repl.find(v); it != repl.end(); it = repl.find(v)) v = it->second;
    return v;
  };
  for (auto& n : g.nodes) {
    for (auto& i : n.inputs) i = resolve(i);
    size_t h = n.prim->hash();
    for (int i : n.inputs) h = hash_mix(h, size_t(i));
    bool merged = false;
    for (int j : seen[h]) {
      const Node& m = nodes[j];
      if (m.inputs == n.inputs && m.prim->equals(*n.prim)) {
        for (size_t k = 0; k < n.outputs.size(); ++k) repl[n.outputs[k]] = m.outputs[k];
        merged = true;
        break;
      }
    }
    if (merged) continue;
    seen[h].push_back(int(nodes.size()));
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  replace_uses(g, repl);
  renumber_producers(g);
}

// Points a node's inputs at their replacements (values a pass removed).
static void redirect_inputs(Node& n, const std::unordered_map<int, int>& repl) {
  for (auto& i : n.inputs) {
    auto it = repl.find(i);
    if (it != repl.end()) i = it->second;
  }
}

void fold_constants(Graph& g) {
  std::unordered_set<int> constant;  // values known at compile time
  std::unordered_map<int, Tensor> data;
  std::unordered_map<int, int> repl;
  std::vector<Node> nodes;
  for (auto& n : g.nodes) {
    redirect_inputs(n, repl);
    const OpKind k = n.prim->kind();
    bool foldable = k != OpKind::Random && k != OpKind::RandomParametric;
    for (int i : n.inputs) foldable &= constant.count(i) > 0;
    // Only small results are folded: a large constant would cost memory in
    // every executable instead of a cheap fill per run.
    int64_t out_elems = 0;
    for (int o : n.outputs) out_elems += g.values[o].meta.numel();
    if (!foldable || out_elems > 4096) {
      nodes.push_back(std::move(n));
      continue;
    }
    std::vector<Tensor> ins;
    for (int i : n.inputs) ins.push_back(data.at(i));
    std::vector<Tensor> outs = lucid::apply(n.prim, ins);  // no tracer is active while compiling
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      // A capture is read from the start of its storage, row-major: a view
      // (of another constant) gets memory of its own.
      if (!outs[j].is_contiguous() || outs[j].offset() != 0 || outs[j].storage_numel() != outs[j].numel())
        outs[j] = contiguous_copy(outs[j]);
      const int cap = int(g.captures.size());
      const int v = g.add_value(g.values[n.outputs[j]].meta, ValueKind::Capture, -1, cap);
      g.captures.push_back({v, outs[j].storage(), {}});
      constant.insert(v);
      data[v] = outs[j];
      repl[n.outputs[j]] = v;
    }
  }
  g.nodes = std::move(nodes);
  replace_uses(g, repl);
  renumber_producers(g);
}

void simplify_reshapes(Graph& g) {
  std::unordered_map<int, int> repl;
  for (auto& n : g.nodes) {
    if (n.prim->kind() != OpKind::Reshape) continue;
    for (auto it = repl.find(n.inputs[0]); it != repl.end(); it = repl.find(n.inputs[0])) n.inputs[0] = it->second;
    const Value& in = g.values[n.inputs[0]];
    if (in.meta.shape == g.values[n.outputs[0]].meta.shape) {
      repl[n.outputs[0]] = n.inputs[0];
      continue;
    }
    if (in.kind == ValueKind::Node && g.nodes[in.producer].prim->kind() == OpKind::Reshape)
      n.inputs[0] = g.nodes[in.producer].inputs[0];
  }
  replace_uses(g, repl);
}

void eliminate_redundant_copies(Graph& g) {
  // Values are immutable: a run writes memory in place only into captured
  // buffers (their new contents). So a copy matters only where what it
  // copies may be read out of a captured buffer, directly or through views.
  std::unordered_map<int, int> repl;
  for (const auto& n : g.nodes) {
    if (n.prim->kind() != OpKind::Copy) continue;
    int root = n.inputs[0];
    while (g.values[root].kind == ValueKind::Node && g.nodes[g.values[root].producer].prim->is_view())
      root = g.nodes[g.values[root].producer].inputs[0];
    if (g.values[root].kind != ValueKind::Capture) repl[n.outputs[0]] = n.inputs[0];
  }
  replace_uses(g, repl);
}

void simplify_permutes(Graph& g) {
  std::unordered_map<int, int> repl;
  for (auto& n : g.nodes) {
    if (n.prim->kind() != OpKind::Permute) continue;
    for (auto it = repl.find(n.inputs[0]); it != repl.end(); it = repl.find(n.inputs[0])) n.inputs[0] = it->second;
    std::vector<int> perm = static_cast<const Permute&>(*n.prim).perm;
    const Value& in = g.values[n.inputs[0]];
    if (in.kind == ValueKind::Node && g.nodes[in.producer].prim->kind() == OpKind::Permute) {
      // permute(permute(x, p), q) = permute(x, p[q])
      const auto& inner = static_cast<const Permute&>(*g.nodes[in.producer].prim).perm;
      for (auto& d : perm) d = inner[d];
      n.inputs[0] = g.nodes[in.producer].inputs[0];
      n.prim = std::make_shared<const Permute>(perm);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int(i);
    if (identity) repl[n.outputs[0]] = n.inputs[0];
  }
  replace_uses(g, repl);
}

// Whether value v is a fill with zeros (any shape; a node, before
// fold_constants turns such fills into constants).
static bool zero_fill(const Graph& g, int v) {
  const Value& val = g.values[v];
  if (val.kind != ValueKind::Node) return false;
  const Node& p = g.nodes[val.producer];
  return p.prim->kind() == OpKind::Full && static_cast<const Full&>(*p.prim).value == 0.0;
}

void concat_scattered_sums(Graph& g) {
  // Pieces of a value that is a sum of slice_scatters into zeros: (source
  // value, its slice). Such sums come from the gradients of slices.
  struct Piece {
    int src;
    const SliceSpec* spec;
  };
  std::unordered_map<int, std::vector<Piece>> pieces;
  for (auto& n : g.nodes) {
    const OpKind k = n.prim->kind();
    if (k == OpKind::SliceScatter && zero_fill(g, n.inputs[0])) {
      pieces[n.outputs[0]] = {{n.inputs[1], &static_cast<const SliceScatter&>(*n.prim).spec}};
      continue;
    }
    if (k != OpKind::Binary || static_cast<const Binary&>(*n.prim).op != BinaryOp::Add) continue;
    auto a = pieces.find(n.inputs[0]), b = pieces.find(n.inputs[1]);
    const TensorMeta& out = g.values[n.outputs[0]].meta;
    if (a == pieces.end() || b == pieces.end() || !(g.values[n.inputs[0]].meta == out) ||
        !(g.values[n.inputs[1]].meta == out))
      continue;
    std::vector<Piece> all = a->second;
    all.insert(all.end(), b->second.begin(), b->second.end());
    std::sort(all.begin(), all.end(), [](const Piece& x, const Piece& y) { return x.spec->starts < y.spec->starts; });
    // Do the pieces tile the whole tensor along one axis, in order?
    const Shape& shape = out.shape;
    int axis = -1;
    for (size_t d = 0; d < shape.size() && all.size() > 1; ++d)
      if (all[0].spec->stops[d] - all[0].spec->starts[d] != shape[d]) axis = int(d);
    bool tiles = axis >= 0;
    int64_t next = 0;
    for (const Piece& p : all) {
      for (size_t d = 0; d < shape.size() && tiles; ++d) {
        if (int(d) == axis) tiles &= p.spec->starts[d] == next && p.spec->steps[d] == 1;
        else tiles &= p.spec->starts[d] == 0 && p.spec->stops[d] == shape[d] && p.spec->steps[d] == 1;
      }
      if (tiles) next = p.spec->stops[axis];
    }
    tiles &= next == (axis >= 0 ? shape[axis] : -1);
    if (tiles) {
      n.prim = std::make_shared<const Concat>(axis);
      n.inputs.clear();
      for (const Piece& p : all) n.inputs.push_back(p.src);
      continue;
    }
    pieces[n.outputs[0]] = std::move(all);
  }
}

void mask_pooled_relu_gradients(Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int i : n.inputs) ++uses[size_t(i)];
  for (int o : g.outputs) ++uses[size_t(o)];
  auto producer = [&](int v, OpKind kind) -> const Node* {
    const Value& val = g.values[size_t(v)];
    if (val.kind != ValueKind::Node || g.nodes[size_t(val.producer)].prim->kind() != kind) return nullptr;
    return &g.nodes[size_t(val.producer)];
  };
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (const Node& n : g.nodes) {
    // where(cond, grad, 0), cond = y > 0, grad = max_pool2d_backward(g, idx),
    // idx from max_pool2d(y): grad's only use, and no broadcasting.
    const Node* gt = n.prim->kind() == OpKind::Where ? producer(n.inputs[0], OpKind::Binary) : nullptr;
    const Node* back = gt ? producer(n.inputs[1], OpKind::MaxPool2dBackward) : nullptr;
    const Node* pool = back ? producer(back->inputs[1], OpKind::MaxPool2d) : nullptr;
    const bool matches = pool && static_cast<const Binary&>(*gt->prim).op == BinaryOp::Gt &&
                         zero_fill(g, gt->inputs[1]) && zero_fill(g, n.inputs[2]) &&
                         gt->inputs[0] == pool->inputs[0] && back->inputs[1] == pool->outputs[1] &&
                         uses[size_t(n.inputs[1])] == 1 &&
                         g.values[size_t(n.outputs[0])].meta == g.values[size_t(n.inputs[1])].meta;
    if (!matches) {
      nodes.push_back(n);  // a copy: later matches read the nodes they come from
      continue;
    }
    const int pooled = pool->outputs[0], grad = back->inputs[0];
    TensorMeta mask_meta = g.values[size_t(pooled)].meta;
    mask_meta.dtype = DType::Bool;
    const int mask = g.add_value(mask_meta, ValueKind::Node, -1, 0);
    const int masked = g.add_value(g.values[size_t(grad)].meta, ValueKind::Node, -1, 0);
    nodes.push_back(Node{gt->prim, {pooled, gt->inputs[1]}, {mask}});
    nodes.push_back(Node{n.prim, {mask, grad, n.inputs[2]}, {masked}});
    nodes.push_back(Node{back->prim, {masked, back->inputs[1]}, {n.outputs[0]}});
  }
  g.nodes = std::move(nodes);
  renumber_producers(g);
}

void decompose_primitives(Graph& g, const std::function<bool(const Primitive&)>& unsupported) {
  std::unordered_map<int, int> repl;
  std::vector<Node> nodes;
  for (auto& n : g.nodes) {
    redirect_inputs(n, repl);
    if (!n.prim->decomposes() || !unsupported(*n.prim)) {
      nodes.push_back(std::move(n));
      continue;
    }
    // Traced on the node's inputs into a graph of its own, then spliced in
    // where the node was.
    GraphTracer tracer;
    std::vector<Tensor> ins;
    for (int i : n.inputs) ins.push_back(tracer.add_input(g.values[i].meta));
    {
      TraceScope scope(&tracer);
      autograd::NoGradGuard no_grad;
      for (const Tensor& t : n.prim->decompose(ins)) tracer.add_output(t);
    }
    const Graph part = tracer.take_graph();
    LUCID_CHECK_T(Error, part.captures.empty() && part.feeds.empty() && part.outputs.size() == n.outputs.size(),
                  "internal: the decomposition of '", n.prim->name(), "' reads memory or feeds of its own, or does "
                  "not give one value per output");
    std::vector<int> value_of(part.values.size(), -1);  // part's value -> g's
    for (size_t k = 0; k < part.inputs.size(); ++k) value_of[part.inputs[k]] = n.inputs[k];
    for (const Node& p : part.nodes) {
      Node m{p.prim, {}, {}};
      for (int i : p.inputs) m.inputs.push_back(value_of[i]);
      for (int o : p.outputs) {
        value_of[o] = g.add_value(part.values[o].meta, ValueKind::Node, -1, -1);
        m.outputs.push_back(value_of[o]);
      }
      nodes.push_back(std::move(m));
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      LUCID_CHECK_T(Error, part.values[part.outputs[k]].meta == g.values[n.outputs[k]].meta, "internal: output ", k,
                    " of the decomposition of '", n.prim->name(), "' is ", meta_str(part.values[part.outputs[k]].meta),
                    ", not ", meta_str(g.values[n.outputs[k]].meta));
      repl[n.outputs[k]] = value_of[part.outputs[k]];
    }
  }
  g.nodes = std::move(nodes);
  replace_uses(g, repl);
  renumber_producers(g);
}

void optimize(Graph& g) {
  eliminate_dead_code(g);
  concat_scattered_sums(g);  // these two before folding: they look for zero-fill nodes
  mask_pooled_relu_gradients(g);
  fold_constants(g);
  simplify_reshapes(g);
  simplify_permutes(g);
  eliminate_redundant_copies(g);
  eliminate_common_subexpressions(g);
  eliminate_dead_code(g);
}

}  // namespace lucid::graph
