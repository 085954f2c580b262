#include "lucid/backend/metal/step_plan.h"

#include <sstream>
#include <unordered_map>

#include "lucid/backend/metal/lower.h"
#include "lucid/graph/passes.h"

namespace lucid::metal {

namespace {

using graph::ValueKind;

size_t nbytes_of(const TensorMeta& m) { return size_t(m.numel()) * itemsize(m.dtype); }

// float64 feeds (the optimizers' host scalars, which the update rules cast to
// the parameter dtype on entry) are rounded to float32 on the host, exactly
// as that cast rounds them; MPSGraph has no float64.
bool demoted(const graph::Graph& g, int v) {
  const graph::Value& val = g.values[size_t(v)];
  return val.kind == ValueKind::Feed && val.meta.dtype == DType::Float64;
}

TensorMeta meta_of(const graph::Graph& g, int v) {
  TensorMeta m = g.values[size_t(v)].meta;
  if (demoted(g, v)) m.dtype = DType::Float32;
  return m;
}

}  // namespace

void decompose_unlowered(graph::Graph& g) {
  graph::decompose_primitives(g, [](const Primitive& p) { return lowering_of(p.kind()) == Lowering::None; });
}

StepPlan plan_step(const graph::Graph& g) {
  StepPlan sp;
  sp.nodes = g.nodes.size();
  sp.writebacks = g.writebacks.size();
  PlanBuilder b(sp.plan);
  for (int v : g.outputs) check_dtype(g.values[size_t(v)].meta.dtype, "compiled step");
  for (const auto& w : g.writebacks) check_dtype(g.values[size_t(w.value)].meta.dtype, "compiled step");

  std::vector<int> tensors(g.values.size(), -1);  // graph value -> plan value
  auto placeholder = [&](int v, StepSlot::Kind kind, int index) {
    const TensorMeta m = meta_of(g, v);
    check_dtype(m.dtype, "compiled step");
    const int t = b.placeholder(m.dtype, m.shape);
    sp.slots.push_back({kind, index, v, m, demoted(g, v)});
    tensors[size_t(v)] = t;
    return t;
  };
  // A value's plan value; inputs, feeds and captures become placeholders
  // when first read. -1 for a value with no elements.
  auto tensor_of = [&](int v) -> int {
    const graph::Value& val = g.values[size_t(v)];
    if (tensors[size_t(v)] >= 0 || val.meta.numel() == 0) return tensors[size_t(v)];
    switch (val.kind) {
      case ValueKind::Input: return placeholder(v, StepSlot::Input, val.index);
      case ValueKind::Feed: return placeholder(v, StepSlot::Feed, val.index);
      case ValueKind::Capture: return placeholder(v, StepSlot::Capture, val.index);
      case ValueKind::Node: break;
    }
    fail<Error>("compiled step: value %", v, " is read before it is computed");
  };

  for (const auto& n : g.nodes) {
    bool any_output = false;
    for (int o : n.outputs) any_output |= g.values[size_t(o)].meta.numel() > 0;
    if (!any_output) continue;
    if (n.prim->kind() == OpKind::Random) {
      const auto& r = static_cast<const Random&>(*n.prim);
      const int key = n.inputs[0];
      if (g.values[size_t(key)].kind == ValueKind::Node)
        fail<NotImplementedError>("compiled step on the metal device: '", r.name(),
                                  "' needs its random key as a step feed, not a value computed in the step");
      const TensorMeta& m = g.values[size_t(n.outputs[0])].meta;
      check_dtype(m.dtype, "compiled step");
      sp.draws.push_back({key, r.dist, m.dtype, m.numel()});
      placeholder(n.outputs[0], StepSlot::Drawn, int(sp.draws.size()) - 1);
      continue;
    }
    std::vector<int> ins;
    std::vector<TensorMeta> in_metas, out_metas;
    for (int v : n.inputs) {
      ins.push_back(tensor_of(v));
      in_metas.push_back(meta_of(g, v));
    }
    for (int o : n.outputs) out_metas.push_back(g.values[size_t(o)].meta);
    std::vector<int> outs = lower_primitive(b, *n.prim, ins, in_metas, out_metas);
    for (size_t k = 0; k < outs.size(); ++k) tensors[size_t(n.outputs[k])] = outs[k];
  }

  // Results: every step output and every new value of a captured buffer,
  // each once.
  std::unordered_map<int, int> target_of;  // graph value -> index into targets
  std::vector<int> wanted(g.outputs.begin(), g.outputs.end());
  for (const auto& w : g.writebacks) wanted.push_back(w.value);
  for (int v : wanted) {
    const TensorMeta& m = g.values[size_t(v)].meta;
    if (m.numel() == 0 || target_of.count(v)) continue;
    b.target(tensor_of(v));
    StepTarget t;
    t.value = v;
    t.meta = m;
    for (size_t i = 0; i < g.outputs.size(); ++i)
      if (g.outputs[i] == v) {
        t.output = int(i);
        break;
      }
    target_of[v] = int(sp.targets.size());
    sp.targets.push_back(t);
  }

  // A capture written once and never read can receive its new value directly.
  std::unordered_map<int, int> writes_of_value;
  for (const auto& w : g.writebacks) ++writes_of_value[w.value];
  for (const auto& w : g.writebacks) {
    auto it = target_of.find(w.value);
    if (it == target_of.end()) continue;
    StepTarget& t = sp.targets[size_t(it->second)];
    if (t.output >= 0) continue;  // computed into the output tensor, copied from there
    if (writes_of_value[w.value] == 1 && tensors[size_t(g.captures[size_t(w.capture)].value)] < 0)
      t.direct_capture = w.capture;
  }

  for (const auto& w : g.writebacks) {
    const size_t n = nbytes_of(g.values[size_t(w.value)].meta);
    if (n) sp.copies.push_back({target_of.at(w.value), true, w.capture, n});
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int v = g.outputs[i];
    const size_t n = nbytes_of(g.values[size_t(v)].meta);
    if (!n) continue;
    const int t = target_of.at(v);
    if (sp.targets[size_t(t)].output != int(i)) sp.copies.push_back({t, false, int(i), n});
  }
  return sp;
}

std::string StepPlan::describe() const {
  int direct = 0;
  for (const auto& t : targets) direct += t.direct_capture >= 0;
  std::ostringstream os;
  os << "metal executable: one MPSGraph for " << nodes << " nodes (" << plan.nodes.size() << " MPSGraph operations), "
     << slots.size() << " inputs, " << targets.size() << " results, " << writebacks << " in-place updates (" << direct
     << " written directly, the rest through a second buffer), " << draws.size() << " random draws made on the host";
  return os.str();
}

bool writes_capture_directly(const StepTarget& t, const void* capture_buffer,
                             const std::unordered_set<const void*>& read_buffers) {
  return t.direct_capture >= 0 && capture_buffer != nullptr && !read_buffers.count(capture_buffer);
}

}  // namespace lucid::metal
