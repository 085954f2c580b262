// lucid._C.optim: engine optimizers (one per param group) and the
// hyper-parameter validation the Python optimizers use.
#include "bindings.h"
#include "lucid/optim/clip.h"
#include "lucid/optim/engine.h"
#include "lucid/optim/kind_table.h"

namespace lucid::python {

using optim::EngineOptimizer;
using optim::Hyper;

namespace {

// A number as Python sees it: bool, int, float, NumPy scalar, one-element
// tensor (anything float() accepts). Returns false for anything else.
bool read_number(py::handle v, std::vector<double>& values, std::vector<bool>& integral) {
  PyObject* o = v.ptr();
  if (PyBool_Check(o) || PyLong_Check(o)) {
    const double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    values.push_back(d);
    integral.push_back(true);
    return true;
  }
  if (PyUnicode_Check(o) || PyBytes_Check(o)) return false;
  PyObject* f = PyNumber_Float(o);
  if (!f) {
    PyErr_Clear();
    return false;
  }
  values.push_back(PyFloat_AsDouble(f));
  integral.push_back(false);
  Py_DECREF(f);
  return true;
}

py::object default_to_py(const optim::Default& d) {
  auto number = [&](size_t i) -> py::object {
    if (d.type == optim::Default::Type::Bool) return py::bool_(d.values[i] != 0);
    if (d.integral[i]) return py::int_(int64_t(d.values[i]));
    return py::float_(d.values[i]);
  };
  switch (d.type) {
    case optim::Default::Type::None: return py::none();
    case optim::Default::Type::Tuple: {
      py::list items;
      for (size_t i = 0; i < d.values.size(); ++i) items.append(number(i));
      return py::tuple(items);
    }
    default: return number(0);
  }
}

py::list defaults_to_py(const std::vector<optim::Default>& ds) {
  py::list out;
  for (const auto& d : ds) out.append(py::make_tuple(d.key, default_to_py(d)));
  return out;
}

py::list entries_to_py(const optim::StateEntries& entries) {
  py::list out;
  for (const auto& [name, t] : entries) out.append(py::make_tuple(name, t));
  return out;
}

}  // namespace

// A param group dict -> Hyper. "params" and "param_names" are not
// hyper-parameters; None means unset; anything that is not a number (a
// string such as LBFGS's line_search_fn) is an error only where it is read.
Hyper group_hyper(const py::dict& d) {
  Hyper h;
  for (auto item : d) {
    if (!py::isinstance<py::str>(item.first)) continue;
    const std::string key = item.first.cast<std::string>();
    if (key == "params" || key == "param_names") continue;
    py::handle v = item.second;
    if (v.is_none()) continue;
    std::vector<double> values;
    std::vector<bool> integral;
    bool ok = true;
    if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
      for (py::handle x : v) ok = ok && read_number(x, values, integral);
    } else {
      ok = read_number(v, values, integral);
    }
    if (ok) h.set(key, std::move(values), std::move(integral));
    else h.set_unreadable(key, py::str(py::type::handle_of(v).attr("__name__")));
  }
  return h;
}

void init_optim(py::module_& parent) {
  py::module_ m = parent.def_submodule("optim", "Engine optimizers");

  py::class_<Hyper>(m, "Hyper")
      .def(py::init(&group_hyper), py::arg("group"))
      .def("keys", &Hyper::keys)
      .def("num", &Hyper::num, py::arg("key"), py::arg("index") = 0)
      .def("flag", &Hyper::flag);
  py::implicitly_convertible<py::dict, Hyper>();

  m.def("validate", &optim::validate, py::arg("kind"), py::arg("hyper"));
  // The kind's table (optim/kind_table.h): what the Python classes declare nowhere else.
  m.def("kind_info", [](const std::string& kind) {
    const optim::KindInfo& k = optim::kind_info(kind);
    py::dict d;
    d["engine"] = k.engine;
    d["defaults"] = defaults_to_py(k.defaults);
    d["loaded"] = defaults_to_py(k.loaded);
    d["forced"] = defaults_to_py(k.forced);
    d["state_at_construction"] = k.state_at_construction;
    return d;
  }, py::arg("kind"));
  m.def("kind_names", &optim::kind_names);
  m.def("has_engine", &optim::has_engine);
  m.def("float_repr", &optim::py_float_repr);
  // Gradient clipping (nn.utils.clip_grad_*), shared with the compiled steps.
  m.def("total_norm", &optim::total_norm, py::arg("tensors"), py::arg("norm_type") = 2.0,
        py::call_guard<py::gil_scoped_release>());
  m.def("clip_with_norm", &optim::clip_with_norm, py::arg("grads"), py::arg("max_norm"), py::arg("total"),
        py::call_guard<py::gil_scoped_release>());
  m.def("clip_by_value", &optim::clip_by_value, py::arg("grads"), py::arg("clip_value"),
        py::call_guard<py::gil_scoped_release>());

  const auto release = py::call_guard<py::gil_scoped_release>();
  py::class_<EngineOptimizer>(m, "EngineOptimizer")
      .def(py::init<const std::string&, std::vector<Tensor>, const Hyper&, const Hyper&>(), py::arg("kind"),
           py::arg("params"), py::arg("group"), py::arg("defaults"))
      .def_property_readonly("kind", &EngineOptimizer::kind)
      .def_property_readonly("buffer_names", [](const EngineOptimizer& e) { return e.algorithm().buffer_names(); })
      .def_property_readonly("scalar_state_names",
                             [](const EngineOptimizer& e) { return e.algorithm().scalar_state_names(); })
      .def_property_readonly("has_step", [](const EngineOptimizer& e) { return e.algorithm().has_step(); })
      .def("num_params", &EngineOptimizer::num_params)
      .def("set_params", &EngineOptimizer::set_params, py::arg("params"))
      .def("param", &EngineOptimizer::param)
      .def("check", &EngineOptimizer::check, py::arg("hyper"), release)
      .def("step", &EngineOptimizer::step, py::arg("hyper"), release)
      .def("init_state", &EngineOptimizer::init_state, py::arg("index"), py::arg("hyper"), release)
      .def("has_state", &EngineOptimizer::has_state)
      .def("step_count", [](const EngineOptimizer& e, size_t i) { return e.state(i).step; })
      .def("state_entries", [](const EngineOptimizer& e, size_t i) { return entries_to_py(e.state_entries(i)); })
      .def("check_state", &EngineOptimizer::check_state, py::arg("index"), py::arg("entries"), release)
      .def("set_state", &EngineOptimizer::set_state, py::arg("index"), py::arg("entries"), release)
      .def("host_scalar_names", &EngineOptimizer::host_scalar_names)
      .def("host_scalars", &EngineOptimizer::host_scalars, py::arg("index"), py::arg("hyper"))
      .def("update_with_ops", &EngineOptimizer::update_with_ops, py::arg("index"), py::arg("param"), py::arg("grad"),
           py::arg("scalars"), py::arg("hyper"), release)
      .def("advance", &EngineOptimizer::advance, py::arg("index"), py::arg("hyper"));
}

}  // namespace lucid::python
