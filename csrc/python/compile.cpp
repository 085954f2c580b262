// lucid._C bindings for compilation: the graph tracer, executables and the
// executable cache. The Python entry points (lucid.compile) drive these.
#include "bindings.h"
#include "lucid/graph/cache.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/trace.h"

namespace lucid::python {

namespace {

// A tracer owned by Python, made current between enter() and exit().
class PyTracer {
 public:
  graph::GraphTracer& tracer() { return *tracer_; }
  void enter() {
    LUCID_CHECK_T(Error, !active_, "this tracer is already active");
    LUCID_CHECK_T(Error, graph::Tracer::current() == nullptr,
                  "a compiled step cannot be traced while another trace is active");
    graph::Tracer::set_current(tracer_.get());
    active_ = true;
  }
  void exit() {
    if (!active_) return;
    graph::Tracer::set_current(nullptr);
    active_ = false;
  }
  std::shared_ptr<graph::Executable> compile(const std::string& device) {
    std::vector<graph::RandomKeyFeed> rf = finished();
    graph::Graph g = tracer_->take_graph();
    return graph::compile(std::move(g), std::move(rf), parse_device(device).type);
  }
  // With a compiler other than a device's (tests of a backend's lowering).
  std::shared_ptr<graph::Executable> compile_with(const GraphCompiler& compiler) {
    std::vector<graph::RandomKeyFeed> rf = finished();
    if (!compiler.optimize) return compiler.fn(tracer_->take_graph(), std::move(rf));
    return graph::compile(tracer_->take_graph(), std::move(rf), compiler.fn);
  }

 private:
  std::vector<graph::RandomKeyFeed> finished() const {
    LUCID_CHECK_T(Error, !active_, "compile() needs the trace to be finished");
    std::vector<graph::RandomKeyFeed> rf;
    for (auto [feed, draws] : tracer_->random_key_feeds()) rf.push_back({feed, draws});
    return rf;
  }
  std::unique_ptr<graph::GraphTracer> tracer_ = std::make_unique<graph::GraphTracer>();
  bool active_ = false;
};

}  // namespace

void init_compile(py::module_& m) {
  py::class_<PyTracer>(m, "GraphTracer")
      .def(py::init<>())
      .def("enter", &PyTracer::enter)
      .def("exit", &PyTracer::exit)
      .def("input", [](PyTracer& t, const Shape& shape, DType dt, const py::object& dev) {
        return t.tracer().add_input({shape, dt, to_device(dev)});
      })
      .def("feed", [](PyTracer& t, const Shape& shape, DType dt) { return t.tracer().add_feed({shape, dt, Device{}}); })
      .def("output", [](PyTracer& t, const Tensor& x) { t.tracer().add_output(x); })
      .def("bind_per_call", [](PyTracer& t, const Tensor& x) { t.tracer().bind_per_call(x); })
      .def("writebacks", [](PyTracer& t) {
        std::vector<std::pair<int, int>> out;
        for (const auto& w : t.tracer().writebacks()) out.push_back({w.capture, w.value});
        return out;
      })
      .def("guard_writebacks_since", [](PyTracer& t, const std::vector<std::pair<int, int>>& before, const Tensor& cond) {
        std::vector<graph::Writeback> b;
        for (auto [c, v] : before) b.push_back({c, v});
        t.tracer().guard_writebacks_since(b, cond);
      })
      .def("num_feeds", [](PyTracer& t) { return t.tracer().graph().feeds.size(); })
      .def("dump", [](PyTracer& t) { return t.tracer().graph().dump(); })
      .def("compile", &PyTracer::compile, py::arg("device") = "cpu")
      .def("compile_with", &PyTracer::compile_with, py::arg("compiler"));

  py::class_<GraphCompiler>(m, "GraphCompiler").def("__repr__", [](const GraphCompiler& c) {
    return "<GraphCompiler " + c.name + ">";
  });

  py::class_<graph::Executable, std::shared_ptr<graph::Executable>>(m, "Executable")
      .def("run", &graph::Executable::run, py::arg("inputs"), py::arg("scalars"),
           py::arg("bound") = std::vector<Tensor>{}, py::call_guard<py::gil_scoped_release>())
      .def("bindings_valid", &graph::Executable::bindings_valid)
      .def("describe", &graph::Executable::describe)
      .def("set_profiling", &graph::Executable::set_profiling)
      .def_property_readonly("profiled_runs", &graph::Executable::profiled_runs)
      .def("profile", [](const graph::Executable& e) {
        std::vector<std::pair<std::string, double>> out;
        for (const auto& p : e.profile()) out.emplace_back(p.step, p.seconds);
        return out;
      })
      .def("dump", [](const graph::Executable& e) { return e.graph().dump(); })
      .def_property_readonly("num_kernels", [](const graph::Executable& e) { return e.graph().nodes.size(); })
      .def_property_readonly("num_scalar_feeds", &graph::Executable::num_scalar_feeds);
  m.def("executable_run_count", &graph::Executable::run_count);
  // A hash of what a trace depends on in a list of tensors (shape, dtype,
  // device, requires_grad): the per-call signature check, done in C++.
  m.def("tensor_key", [](const std::vector<Tensor>& ts) {
    size_t h = ts.size();
    for (const auto& t : ts) {
      const TensorMeta& m = t.meta();
      h = hash_seq(h, m.shape);
      h = hash_mix(h, size_t(m.dtype) | size_t(m.device.type) << 8 | size_t(m.device.index) << 16 |
                          size_t(t.requires_grad()) << 32);
    }
    return h;
  });

  py::class_<graph::ExecutableCache>(m, "ExecutableCache")
      .def(py::init<size_t>(), py::arg("capacity") = 8)
      .def("get", &graph::ExecutableCache::get)
      .def("put", &graph::ExecutableCache::put)
      .def("erase", &graph::ExecutableCache::erase)
      .def("clear", &graph::ExecutableCache::clear)
      .def_property("capacity", &graph::ExecutableCache::capacity, &graph::ExecutableCache::set_capacity)
      .def("__len__", &graph::ExecutableCache::size)
      .def_property_readonly("hits", &graph::ExecutableCache::hits)
      .def_property_readonly("misses", &graph::ExecutableCache::misses)
      .def_property_readonly("compile_seconds", &graph::ExecutableCache::compile_seconds)
      .def("signatures", &graph::ExecutableCache::signatures);
}

}  // namespace lucid::python
