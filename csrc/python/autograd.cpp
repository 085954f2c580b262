// Autograd entry points: backward, grad, grad mode, tensor hooks, the nodes
// of Python-defined functions (lucid.autograd.Function) and the graph's
// nodes as Python objects (Tensor.grad_fn, lucid.autograd.graph.Node).
#include <cctype>
#include <sstream>

#include "bindings.h"
#include "lucid/api/autograd.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/core/profiler.h"

namespace lucid::python {

namespace {

// A Python object held by autograd nodes, which may be freed on any thread
// without the GIL (or after the interpreter has gone: then it is leaked).
std::shared_ptr<py::object> keep_python(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing();
#else
    const bool finalizing = _Py_IsFinalizing();
#endif
    if (!Py_IsInitialized() || finalizing) {
      p->release();
      delete p;
      return;
    }
    py::gil_scoped_acquire gil;
    delete p;
  });
}

std::string node_display_name(const autograd::Node& n) { return autograd::display_name(n); }

// The node's class name as PyTorch shows it (repr, attribute errors).
std::string node_type_name(const autograd::Node& n) {
  return dynamic_cast<const autograd::AccumulateGrad*>(&n) ? "AccumulateGrad" : node_display_name(n);
}

Tensor tensor_or_none(const py::object& r, const char* what) {
  if (r.is_none()) return Tensor();
  if (!py::isinstance<Tensor>(r))
    throw py::type_error(std::string(what) + " must return None or a Tensor, got " +
                         std::string(py::str(py::type::of(r).attr("__name__"))));
  return r.cast<Tensor>();
}

// The node of one lucid.autograd.Function call: its backward is the
// Function's, called with the gradients of the outputs; it returns one
// gradient per forward argument.
class PythonFunctionNode : public autograd::Node {
 public:
  PythonFunctionNode(std::string name, py::object backward, py::object release, std::vector<TensorMeta> outputs,
                     std::vector<std::optional<TensorMeta>> inputs, bool materialize)
      : name_(std::move(name)), backward_(keep_python(std::move(backward))),
        release_(keep_python(std::move(release))), outputs_(std::move(outputs)), inputs_(std::move(inputs)),
        materialize_(materialize) {}
  std::string name() const override { return name_; }
  size_t num_outputs() const override { return outputs_.size(); }

  // The node whose backward runs on this thread (saved outputs unpacked by
  // a backward that records history are outputs of it).
  static thread_local PythonFunctionNode* running;

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    py::gil_scoped_acquire gil;
    struct Running {
      PythonFunctionNode* prev = running;
      explicit Running(PythonFunctionNode* n) { running = n; }
      ~Running() { running = prev; }
    } now_running(this);
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor g = grads[i];
      if (!g.defined() && materialize_) g = zeros(outputs_[i].shape, outputs_[i].dtype, outputs_[i].device);
      args[i] = g.defined() ? py::cast(g) : py::none();
    }
    py::object r = (*backward_)(*args);
    std::vector<py::object> items;
    if (py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r)) {
      for (py::handle h : r) items.push_back(py::reinterpret_borrow<py::object>(h));
    } else {
      items.push_back(r);
    }
    const size_t n = inputs_.size();
    bool extra = items.size() < n;
    for (size_t i = n; i < items.size(); ++i) extra |= !items[i].is_none();
    if (extra)
      fail<Error>("function ", name_, " returned an incorrect number of gradients (expected ", n, ", got ",
                  items.size(), ")");
    std::vector<Tensor> out(n);
    for (size_t i = 0; i < n; ++i) {
      Tensor g = tensor_or_none(items[i], ("function " + name_ + " backward").c_str());
      if (!g.defined()) continue;
      if (!inputs_[i])
        fail<Error>("function ", name_, " returned a gradient different than None at position ", i + 1,
                    ", but the corresponding forward input was not a Tensor");
      if (!next_edges[i].node) continue;  // an input that needs no gradient
      const TensorMeta& m = *inputs_[i];
      if (g.shape() != m.shape) {
        LUCID_CHECK(is_expandable_to(m.shape, g.shape()), "Function ", name_,
                    " returned an invalid gradient at index ", i, " - got ", shape_str(g.shape()),
                    " but expected shape compatible with ", shape_str(m.shape));
        g = sum_to(g, m.shape);
      }
      if (g.dtype() != m.dtype) g = cast(g, m.dtype);
      out[i] = g;
    }
    return out;
  }

  void release_saved() override {
    py::gil_scoped_acquire gil;
    (*release_)();
  }

 private:
  static bool is_expandable_to(const Shape& from, const Shape& to) {
    if (from.size() > to.size()) return false;
    const size_t lead = to.size() - from.size();
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != to[lead + d] && from[d] != 1) return false;
    return true;
  }

  std::string name_;
  std::shared_ptr<py::object> backward_, release_;
  std::vector<TensorMeta> outputs_;
  std::vector<std::optional<TensorMeta>> inputs_;  // per forward argument; none for a non-tensor
  bool materialize_;
};

thread_local PythonFunctionNode* PythonFunctionNode::running = nullptr;

}  // namespace

void init_autograd(py::module_& m) {
  // The gradients backward and grad start from (PyTorch's _make_grads): a
  // missing one is ones for a scalar root that requires grad (the engine
  // refuses a root that does not).
  auto root_gradients = [](const std::vector<Tensor>& roots, const std::vector<std::optional<Tensor>>& grads) {
    std::vector<Tensor> gs;
    for (size_t i = 0; i < std::min(roots.size(), grads.size()); ++i) {
      const Tensor& r = roots[i];
      if (grads[i] || !r.requires_grad()) {
        gs.push_back(grads[i] ? *grads[i] : Tensor());
        continue;
      }
      gs.push_back(autograd::implicit_root_grad(r));
    }
    return gs;
  };

  m.def("backward", [root_gradients](const std::vector<Tensor>& roots,
                                     const std::vector<std::optional<Tensor>>& grads, bool retain_graph,
                                     bool create_graph) {
    autograd::run_backward(roots, root_gradients(roots, grads), retain_graph, {}, false, create_graph);
  }, py::arg("roots"), py::arg("grads"), py::arg("retain_graph") = false, py::arg("create_graph") = false,
     py::call_guard<py::gil_scoped_release>());

  m.def("grad", [root_gradients](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                 const std::vector<std::optional<Tensor>>& grads, bool retain_graph,
                                 bool allow_unused, bool create_graph) {
    std::vector<Tensor> r = autograd::run_backward(outputs, root_gradients(outputs, grads), retain_graph, inputs,
                                                   allow_unused, create_graph);
    std::vector<std::optional<Tensor>> out;
    for (auto& t : r) out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grads"), py::arg("retain_graph") = false,
     py::arg("allow_unused") = false, py::arg("create_graph") = false, py::call_guard<py::gil_scoped_release>());

  m.def("_register_hook", [](const Tensor& t, py::function fn) {
    auto f = keep_python(std::move(fn));
    return autograd::add_grad_hook(t, [f](const Tensor& g) {
      py::gil_scoped_acquire gil;
      return tensor_or_none((*f)(g), "hook");
    });
  });
  m.def("_register_post_accumulate_hook", [](const Tensor& t, py::function fn) {
    auto f = keep_python(std::move(fn));
    return autograd::add_post_accumulate_grad_hook(t, [f](const Tensor& leaf) {
      py::gil_scoped_acquire gil;
      if (!(*f)(leaf).is_none()) fail<Error>("Tensor post accumulate grad hooks should return None.");
      return Tensor();
    });
  });
  m.def("_remove_hook", &autograd::remove_grad_hook);

  // Wires the outputs of a Function's forward to a node calling `backward`:
  // returns the outputs, an output that is one of the inputs (returned
  // unchanged, not marked dirty) as a new tensor sharing its memory.
  // A Function's saved output as its backward sees it: in a backward that
  // records history (create_graph), the output of the Function's node it is
  // (PyTorch's saved outputs keep their grad_fn); otherwise as saved.
  m.def("_saved_output", [](const Tensor& saved, uint32_t output_nr) {
    PythonFunctionNode* node = PythonFunctionNode::running;
    if (!node || !autograd::GradMode::is_enabled() || !is_floating(saved.dtype())) return saved;
    Tensor o = saved.detach();
    o.impl()->requires_grad = true;
    o.impl()->grad_fn = node->shared_from_this();
    o.impl()->output_nr = output_nr;
    return o;
  });

  m.def("_function_node", [](const std::string& name, py::object backward, py::object release,
                             const std::vector<std::optional<Tensor>>& inputs, std::vector<Tensor> outputs,
                             const std::vector<bool>& differentiable, const std::vector<bool>& dirty,
                             bool materialize) {
    std::vector<TensorMeta> out_metas;
    for (const Tensor& o : outputs) out_metas.push_back(o.meta());
    std::vector<std::optional<TensorMeta>> in_metas;
    std::vector<autograd::Edge> edges;
    for (const auto& t : inputs) {
      in_metas.push_back(t ? std::optional<TensorMeta>(t->meta()) : std::nullopt);
      edges.push_back(t ? autograd::gradient_edge(*t) : autograd::Edge{});
    }
    auto node = std::make_shared<PythonFunctionNode>(name, std::move(backward), std::move(release), out_metas,
                                                     in_metas, materialize);
    node->next_edges = std::move(edges);
    for (size_t k = 0; k < outputs.size(); ++k) {
      Tensor& o = outputs[k];
      if (!differentiable[k] || !is_floating(o.dtype())) continue;
      if (dirty[k]) {
        LUCID_CHECK_T(Error, !(o.is_leaf() && o.requires_grad()),
                      "a leaf Variable that requires grad is being used in an in-place operation.");
      } else {
        for (const auto& t : inputs)
          if (t && t->impl() == o.impl()) {
            o = o.detach();
            break;
          }
      }
      o.impl()->requires_grad = true;
      autograd::set_history(o, node, uint32_t(k));
    }
    return outputs;
  });

  // A node of the backward graph, as PyTorch's torch.autograd.graph.Node:
  // name(), next_functions ((node or None, input_nr) per input), and
  // `variable` on a leaf's AccumulateGrad, so code that walks the graph from
  // loss.grad_fn (printing it, drawing it) runs unchanged.
  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node")
      .def("name", &node_display_name)
      .def_property_readonly("next_functions", [](const autograd::Node& n) {
        py::tuple out(n.next_edges.size());
        for (size_t i = 0; i < n.next_edges.size(); ++i) {
          const autograd::Edge& e = n.next_edges[i];
          out[i] = py::make_tuple(e.node ? py::cast(e.node) : py::none(), e.input_nr);
        }
        return out;
      })
      .def_property_readonly("variable", [](const autograd::Node& n) {
        const auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(&n);
        if (!acc) throw py::attribute_error("'" + node_type_name(n) + "' object has no attribute 'variable'");
        return Tensor(acc->leaf());
      })
      .def("_sequence_nr", [](const autograd::Node& n) { return n.sequence_nr; })
      .def("__repr__", [](const autograd::Node& n) {
        std::ostringstream os;
        os << "<" << node_type_name(n) << " object at " << static_cast<const void*>(&n) << ">";
        return os.str();
      });

  m.def("is_grad_enabled", &autograd::GradMode::is_enabled);
  m.def("set_grad_enabled", &autograd::GradMode::set_enabled);
  m.def("is_anomaly_enabled", &autograd::AnomalyMode::is_enabled);
  m.def("is_anomaly_check_nan_enabled", &autograd::AnomalyMode::check_nan);
  m.def("set_anomaly_enabled", &autograd::AnomalyMode::set_enabled, py::arg("enabled"), py::arg("check_nan") = true);

  // The eager profiler (lucid.profiler): events as (name, start_ns, end_ns, thread, input_shapes).
  m.def("_profiler_enable", &profiler::enable, py::arg("record_shapes"));
  m.def("_profiler_enabled", &profiler::enabled);
  m.def("_profiler_disable", [] {
    py::list out;
    for (auto& e : profiler::disable())
      out.append(py::make_tuple(std::move(e.name), e.start_ns, e.end_ns, e.thread, std::move(e.input_shapes)));
    return out;
  });
  m.def("_profiler_now_ns", &profiler::now_ns);
  m.def("_profiler_record", [](std::string name, int64_t start_ns, int64_t end_ns) {
    profiler::record({std::move(name), start_ns, end_ns, profiler::thread_id(), {}});
  });
}

}  // namespace lucid::python
