// lucid._C bindings for compilation: the compiled step (one C++ object behind
// make_step, fused_step, train_step and compile_optimizer), the GradScaler's
// state, and the graph tracer and executables underneath.
#include "bindings.h"
#include "lucid/compile/step.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/graph_tracer.h"
#include "lucid/optim/engine.h"

namespace lucid::python {

namespace {

// Bumped by every change to a Module's parameters or children (the
// _Registry dicts of lucid.nn.Module): a compiled step reuses the
// model.parameters() it read while this has not moved.
uint64_t g_module_structure_version = 1;

using compile::CompiledStep;
using compile::GradScalerState;
using compile::StepMode;

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

// The Python front end of a CompiledStep: reads the model's parameters, the
// optimizer's param groups and the scaler for each call, and runs the traced
// forward (a Python callable) on a cache miss. The Python classes of
// lucid.compile subclass it.
class PyCompiledStep {
 public:
  PyCompiledStep(StepMode mode, py::object forward, py::object model, py::object optimizer, py::object scaler,
                 size_t cache_size, std::optional<double> clip_norm, double norm_type,
                 std::optional<double> clip_value, int64_t accumulate, bool single_result)
      : model_(std::move(model)), optimizer_(std::move(optimizer)), scaler_(std::move(scaler)),
        single_result_(single_result) {
    compile::StepConfig config;
    config.mode = mode;
    config.cache_size = cache_size;
    config.clip_norm = clip_norm;
    config.norm_type = norm_type;
    config.clip_value = clip_value;
    config.accumulate = accumulate;
    has_training_ = !model_.is_none() && py::hasattr(model_, "training");
    py::object module_cls = py::module_::import("lucid.nn").attr("Module");
    is_module_ = !model_.is_none() && py::isinstance(model_, module_cls);
    if (has_training_) config.fact_names.push_back("model.training");
    compile::Forward fwd;
    if (!forward.is_none()) {
      fwd = [forward](const std::vector<Tensor>& args) {
        py::gil_scoped_acquire gil;
        py::list sym;
        for (const Tensor& a : args) sym.append(py::cast(a));
        py::object out = forward(sym);
        return out.cast<std::vector<Tensor>>();
      };
    }
    core_ = std::make_unique<CompiledStep>(std::move(config), std::move(fwd));
  }

  py::object call(const py::args& args) {
    const auto held = lock();  // the reads, the checks and the run are one call
    compile::Call c = read(args);
    std::optional<CompiledStep::Prepared> prepared = core_->prepare(std::move(c));
    if (!prepared) return py::none();
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release release;
      outs = core_->run(*prepared);
    }
    if (core_->config().mode == StepMode::OptimizerUpdate) return py::none();
    if (single_result_) return py::cast(outs[0]);
    return py::cast(outs);
  }

  CompiledStep& core() { return *core_; }
  // The step's lock, waited for without the GIL: its holder may need the
  // GIL to finish (a trace runs the Python forward; results are converted).
  std::unique_lock<std::recursive_mutex> lock() {
    std::unique_lock<std::recursive_mutex> held(core_->mutex(), std::try_to_lock);
    if (!held) {  // another thread's call is running: wait for it without the GIL
      py::gil_scoped_release release;
      held.lock();
    }
    return held;
  }
  py::object model() const { return model_; }
  py::object optimizer() const { return optimizer_; }
  py::object scaler() const { return scaler_; }

 private:
  compile::Call read(const py::args& args) {
    compile::Call c;
    const StepMode mode = core_->config().mode;
    if (mode != StepMode::OptimizerUpdate) {
      c.args.reserve(args.size());
      for (py::handle a : args) {
        if (py::isinstance<Tensor>(a)) {
          c.args.push_back(a.cast<Tensor>());
        } else {  // a number, list or array: as lucid.tensor() makes it
          if (!tensor_fn_) tensor_fn_ = py::module_::import("lucid").attr("tensor");
          c.args.push_back(tensor_fn_(a).cast<Tensor>());
        }
      }
    } else if (!args.empty()) {
      fail<TypeError>("a compiled optimizer's step takes no tensor arguments");
    }
    if (!optimizer_.is_none()) read_groups(c);
    if (mode != StepMode::OptimizerUpdate) {
      if (!model_.is_none()) {
        if (!is_module_ || params_version_ != g_module_structure_version) {
          params_.clear();
          for (py::handle p : model_.attr("parameters")()) params_.push_back(p.cast<Tensor>());
          params_version_ = g_module_structure_version;
        }
        c.params = params_;
      } else {
        for (const auto& g : c.groups)
          for (size_t i = 0; i < g.engine->num_params(); ++i) c.params.push_back(g.engine->param(i));
      }
    }
    if (has_training_) c.facts.push_back(py::bool_(model_.attr("training")) ? 1 : 0);
    if (!scaler_.is_none()) {
      auto* s = scaler_.attr("_core").cast<GradScalerState*>();
      if (s->enabled) c.scaler = s;
    }
    return c;
  }

  void read_groups(compile::Call& c) {
    py::list groups = optimizer_.attr("param_groups");
    py::list engines = optimizer_.attr("_engines");
    if (groups.size() != engines.size())
      fail<Error>("the optimizer has ", groups.size(), " param groups but ", engines.size(),
                  " engines: add groups with add_param_group");
    c.groups.reserve(groups.size());
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      py::dict group = groups[gi];
      auto* engine = engines[gi].cast<optim::EngineOptimizer*>();
      py::list params = group["params"];
      bool same = params.size() == engine->num_params();
      for (size_t j = 0; same && j < params.size(); ++j)
        same = py::isinstance<Tensor>(params[j]) && params[j].cast<Tensor>().same(engine->param(j));
      if (!same) engine->set_params(params.cast<std::vector<Tensor>>());  // the list was edited, as torch allows
      c.groups.push_back({engine, hyper_of(gi, group)});
    }
  }

  // The group's hyper-parameters, converted again only when one of its
  // values is a different object (or a mutable one, whose contents may have
  // changed in place): an LR schedule assigns a new float, so it is seen.
  std::shared_ptr<const optim::Hyper> hyper_of(size_t gi, const py::dict& group) {
    if (hyper_cache_.size() <= gi) hyper_cache_.resize(gi + 1);
    HyperCache& cache = hyper_cache_[gi];
    bool same = cache.valid && size_t(PyDict_Size(group.ptr())) == cache.items.size();
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    size_t k = 0;
    while (same && PyDict_Next(group.ptr(), &pos, &key, &value)) {
      same = cache.items[k].first.ptr() == key && cache.items[k].second.ptr() == value;
      ++k;
    }
    if (same) return cache.hyper;
    cache.hyper = std::make_shared<const optim::Hyper>(group_hyper(group));
    cache.items.clear();
    cache.valid = true;
    pos = 0;
    while (PyDict_Next(group.ptr(), &pos, &key, &value)) {
      cache.items.emplace_back(py::reinterpret_borrow<py::object>(key), py::reinterpret_borrow<py::object>(value));
      const std::string name = py::str(key);
      if (name != "params" && name != "param_names" && !immutable(value)) cache.valid = false;
    }
    return cache.hyper;
  }

  static bool immutable(PyObject* v) {
    if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v))
      return true;
    if (PyTuple_CheckExact(v)) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); ++i)
        if (!immutable(PyTuple_GET_ITEM(v, i))) return false;
      return true;
    }
    return false;
  }

  struct HyperCache {
    bool valid = false;
    std::vector<std::pair<py::object, py::object>> items;
    std::shared_ptr<const optim::Hyper> hyper;
  };

  std::unique_ptr<CompiledStep> core_;
  py::object model_, optimizer_, scaler_;
  py::object tensor_fn_;
  bool has_training_ = false;
  bool is_module_ = false;
  std::vector<Tensor> params_;  // the model's parameters as last read
  uint64_t params_version_ = 0;
  std::vector<HyperCache> hyper_cache_;
  bool single_result_;
};

}  // namespace

void init_compile(py::module_& m) {
  py::enum_<StepMode>(m, "StepMode")
      .value("gradients", StepMode::Gradients)
      .value("update", StepMode::Update)
      .value("optimizer_update", StepMode::OptimizerUpdate)
      .value("forward", StepMode::Forward);

  py::class_<GradScalerState>(m, "GradScalerState")
      .def(py::init<double, double, double, int64_t, bool>(), py::arg("init_scale"), py::arg("growth_factor"),
           py::arg("backoff_factor"), py::arg("growth_interval"), py::arg("enabled"))
      .def_readwrite("enabled", &GradScalerState::enabled)
      .def_readwrite("init_scale", &GradScalerState::init_scale)
      .def_readwrite("scale", &GradScalerState::scale)
      .def_readwrite("growth_factor", &GradScalerState::growth_factor)
      .def_readwrite("backoff_factor", &GradScalerState::backoff_factor)
      .def_readwrite("growth_interval", &GradScalerState::growth_interval)
      .def_readwrite("init_growth_tracker", &GradScalerState::init_growth_tracker)
      .def_readwrite("growth_tracker", &GradScalerState::growth_tracker)
      .def("lazy_init", &GradScalerState::lazy_init)
      .def("get_scale", &GradScalerState::get_scale)
      .def("update", &GradScalerState::update, py::arg("found_inf"));

  py::class_<PyCompiledStep>(m, "CompiledStep")
      .def(py::init<StepMode, py::object, py::object, py::object, py::object, size_t, std::optional<double>, double,
                    std::optional<double>, int64_t, bool>(),
           py::arg("mode"), py::arg("forward"), py::arg("model"), py::arg("optimizer"), py::arg("scaler"),
           py::arg("cache_size") = 8, py::arg("clip_norm") = py::none(), py::arg("norm_type") = 2.0,
           py::arg("clip_value") = py::none(), py::arg("accumulate") = 1, py::arg("single_result") = true)
      .def("__call__", &PyCompiledStep::call)
      .def("_cache_counters", [](PyCompiledStep& s) {
        const compile::CacheInfo i = [&] {
          const auto held = s.lock();
          return s.core().cache_info();
        }();
        return py::make_tuple(i.hits, i.misses, i.entries, i.compile_seconds,
                              i.last_miss.empty() ? py::object(py::none()) : py::object(py::str(i.last_miss)));
      })
      // Members that take the step's lock are called with the GIL released
      // (see PyCompiledStep::lock).
      .def_property("cache_size", [](PyCompiledStep& s) { return s.core().cache_size(); },
                    [](PyCompiledStep& s, size_t n) {
                      const auto held = s.lock();
                      s.core().set_cache_size(n);
                    })
      .def("clear_cache", [](PyCompiledStep& s) {
        const auto held = s.lock();
        s.core().clear_cache();
      })
      .def("cached_signatures", [](PyCompiledStep& s) {
        const auto held = s.lock();
        return s.core().cached_signatures();
      })
      .def("executables", [](PyCompiledStep& s) {
        const auto held = s.lock();
        return s.core().executables();
      },
           "The compiled executables in the cache, most recent first.");

  m.def("_is_tracing", [] { return graph::Tracer::current() != nullptr; },
        "Whether ops are being recorded into a compiled step's graph.");
  py::class_<PyTracer>(m, "GraphTracer")
      .def(py::init<>())
      .def("enter", &PyTracer::enter)
      .def("exit", &PyTracer::exit)
      .def("input", [](PyTracer& t, const Shape& shape, DType dt, const py::object& dev) {
        return t.tracer().add_input({shape, dt, to_device(dev)});
      })
      .def("feed", [](PyTracer& t, const Shape& shape, DType dt) { return t.tracer().add_feed({shape, dt, Device{}}); })
      .def("output", [](PyTracer& t, const Tensor& x) { t.tracer().add_output(x); })
      .def("num_feeds", [](PyTracer& t) { return t.tracer().graph().feeds.size(); })
      .def("dump", [](PyTracer& t) { return t.tracer().graph().dump(); })
      .def("compile", &PyTracer::compile, py::arg("device") = "cpu")
      .def("compile_with", &PyTracer::compile_with, py::arg("compiler"));

  py::class_<GraphCompiler>(m, "GraphCompiler").def("__repr__", [](const GraphCompiler& c) {
    return "<GraphCompiler " + c.name + ">";
  });
  // Tests of a backend's lowering: compiled steps use `compiler` (None: the devices' own again).
  m.def("_compile_steps_with", [](std::optional<GraphCompiler> compiler) {
    if (!compiler) return CompiledStep::compile_steps_with({});
    CompiledStep::compile_steps_with([c = *compiler](graph::Graph g, std::vector<graph::RandomKeyFeed> rf) {
      if (!c.optimize) return c.fn(std::move(g), std::move(rf));
      return graph::compile(std::move(g), std::move(rf), c.fn);
    });
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
  m.def("_bump_module_structure", [] { ++g_module_structure_version; });
}

}  // namespace lucid::python
