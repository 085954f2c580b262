#include "lucid/backend/metal/reference.h"

#include <cstring>
#include <unordered_set>

#include "lucid/backend/metal/lower.h"
#include "lucid/backend/metal/step_plan.h"

namespace lucid::metal {

namespace {

using graph::ValueKind;

size_t nbytes_of(const TensorMeta& m) { return size_t(m.numel()) * itemsize(m.dtype); }

class ReferenceExecutable final : public graph::Executable {
 public:
  ReferenceExecutable(graph::Graph g, std::vector<graph::RandomKeyFeed> rf, ReferenceOptions o)
      : Executable(std::move(g), std::move(rf)), options_(o) {
    if (!options_.eager) {
      step_ = plan_step(graph_);
      for (const auto& t : step_.targets) second_.emplace_back(t.second_buffer() ? nbytes_of(t.meta) : 0);
    }
  }

  std::string describe() const override {
    return options_.eager ? "metal reference: each node through its eager plan, on the host"
                          : step_.describe() + " (run by the reference interpreter on the host)";
  }

 private:
  const void* value_data(int v, const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) const {
    const graph::Value& val = graph_.values[size_t(v)];
    switch (val.kind) {
      case ValueKind::Input: return inputs[size_t(val.index)].raw_data();
      case ValueKind::Feed: return feeds[size_t(val.index)].raw_data();
      case ValueKind::Capture: return graph_.captures[size_t(val.index)].storage->data();
      case ValueKind::Node: break;
    }
    return nullptr;
  }

  std::vector<Tensor> new_outputs() const {
    std::vector<Tensor> outs;
    for (int o : graph_.outputs) {
      const TensorMeta& m = graph_.values[size_t(o)].meta;
      outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    }
    return outs;
  }

  // The compiled step, bound as executable.mm binds it, each tensor's memory
  // standing for its buffer.
  std::vector<Tensor> run_step(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) {
    std::vector<Tensor> outs = new_outputs();
    std::vector<std::vector<unsigned char>> staging(step_.slots.size());
    std::vector<const void*> args;
    std::unordered_set<const void*> read;
    for (size_t k = 0; k < step_.slots.size(); ++k) {
      const StepSlot& s = step_.slots[k];
      const void* p = nullptr;
      if (s.kind == StepSlot::Drawn) {
        const StepDraw& d = step_.draws[size_t(s.index)];
        const int64_t* key = static_cast<const int64_t*>(value_data(d.key_value, inputs, feeds));
        staging[k].resize(size_t(d.count) * itemsize(d.dtype));
        fill_random(staging[k].data(), d.dtype, d.dist, uint64_t(key[0]), uint64_t(key[1]), d.count);
        p = staging[k].data();
      } else {
        p = value_data(s.value, inputs, feeds);
        if (s.from_double) {
          staging[k].resize(size_t(s.meta.numel()) * sizeof(float));
          float* f = reinterpret_cast<float*>(staging[k].data());
          for (int64_t i = 0; i < s.meta.numel(); ++i) f[i] = float(static_cast<const double*>(p)[i]);
          p = staging[k].data();
        } else {
          read.insert(p);
        }
      }
      args.push_back(p);
    }
    std::vector<void*> result(step_.targets.size());
    for (size_t i = 0; i < step_.targets.size(); ++i) {
      const StepTarget& t = step_.targets[i];
      if (t.output >= 0) {
        result[i] = outs[size_t(t.output)].raw_data();
      } else {
        void* capture = t.direct_capture >= 0 ? graph_.captures[size_t(t.direct_capture)].storage->data() : nullptr;
        result[i] = writes_capture_directly(t, capture, read) ? capture : second_[i].data();
      }
      // MPSGraph must not read and write one buffer in a run.
      if (read.count(result[i]))
        fail<Error>("metal plan: result ", i, " (value %", t.value, ") would be written into a buffer the run reads");
    }
    std::vector<std::vector<unsigned char>> results = interpret(step_.plan, args, options_.interpreter);
    for (size_t i = 0; i < results.size(); ++i) std::memcpy(result[i], results[i].data(), results[i].size());
    // After the graph, in the same submission: in-place updates and repeated outputs.
    for (const StepCopy& c : step_.copies) {
      void* dst = c.to_capture ? graph_.captures[size_t(c.index)].storage->data() : outs[size_t(c.index)].raw_data();
      if (dst != result[size_t(c.target)]) std::memcpy(dst, result[size_t(c.target)], c.nbytes);
    }
    return outs;
  }

  // Node by node, each through the eager kernel's plan (or host fill / copy).
  std::vector<Tensor> run_eager(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) {
    std::vector<std::vector<unsigned char>> vals(graph_.values.size());
    auto data = [&](int v) -> const void* {
      return graph_.values[size_t(v)].kind == ValueKind::Node ? vals[size_t(v)].data() : value_data(v, inputs, feeds);
    };
    for (const auto& n : graph_.nodes) {
      std::vector<TensorMeta> in_metas, out_metas;
      std::vector<ConstArg> args;
      for (int v : n.inputs) in_metas.push_back(graph_.values[size_t(v)].meta);
      for (size_t k = 0; k < n.inputs.size(); ++k) args.push_back({data(n.inputs[k]), &in_metas[k]});
      for (int o : n.outputs) {
        out_metas.push_back(graph_.values[size_t(o)].meta);
        vals[size_t(o)].assign(nbytes_of(out_metas.back()), 0);
      }
      bool any_output = false;
      for (const auto& m : out_metas) any_output |= m.numel() > 0;
      if (!any_output) continue;
      const Primitive& p = *n.prim;
      switch (lowering_of(p.kind())) {
        case Lowering::HostFill: fill_host(p, args, vals[size_t(n.outputs[0])].data(), out_metas[0]); break;
        case Lowering::Blit:
          check_dtype(out_metas[0].dtype, "copy");
          std::memcpy(vals[size_t(n.outputs[0])].data(), args[0].data, nbytes_of(out_metas[0]));
          break;
        case Lowering::Graph: {
          check_indices(p, args);
          check_divisors(p, args);
          const EagerPlan ep = plan_eager(p, in_metas, out_metas);
          std::vector<const void*> ins;
          for (int i : ep.input_of_placeholder) ins.push_back(args[size_t(i)].data);
          std::vector<std::vector<unsigned char>> res = interpret(ep.plan, ins, options_.interpreter);
          for (size_t k = 0; k < res.size(); ++k) vals[size_t(n.outputs[size_t(ep.output_of_target[k])])] = std::move(res[k]);
          break;
        }
        case Lowering::None:
          fail<NotImplementedError>("the operator '", p.name(), "' is not implemented for the metal device");
      }
    }
    std::vector<Tensor> outs = new_outputs();
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].numel()) std::memcpy(outs[i].raw_data(), data(graph_.outputs[i]), nbytes_of(outs[i].meta()));
    for (const auto& w : graph_.writebacks) {
      const size_t n = nbytes_of(graph_.values[size_t(w.value)].meta);
      if (n) std::memmove(graph_.captures[size_t(w.capture)].storage->data(), data(w.value), n);
    }
    return outs;
  }

  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) override {
    std::vector<Tensor> outs = options_.eager ? run_eager(inputs, feeds) : run_step(inputs, feeds);
    for (const auto& w : graph_.writebacks) graph_.captures[size_t(w.capture)].storage->bump_version();
    return outs;
  }

  ReferenceOptions options_;
  StepPlan step_;
  std::vector<std::vector<unsigned char>> second_;  // the second buffers of in-place updates
};

}  // namespace

std::shared_ptr<graph::Executable> compile_reference(graph::Graph g, std::vector<graph::RandomKeyFeed> rf,
                                                     const ReferenceOptions& options) {
  decompose_unlowered(g);
  return std::make_shared<ReferenceExecutable>(std::move(g), std::move(rf), options);
}

std::vector<std::pair<std::string, std::string>> metal_kinds() {
  std::vector<std::pair<std::string, std::string>> out;
  for (int k = 0; k < int(OpKind::Count); ++k) {
    switch (lowering_of(OpKind(k))) {
      case Lowering::Graph: out.emplace_back(op_kind_name(OpKind(k)), "graph"); break;
      case Lowering::HostFill: out.emplace_back(op_kind_name(OpKind(k)), "host"); break;
      case Lowering::Blit: out.emplace_back(op_kind_name(OpKind(k)), "blit"); break;
      case Lowering::None: break;
    }
  }
  return out;
}

}  // namespace lucid::metal
