#pragma once
// Shared pieces of the lucid._C bindings: conversions between Python values
// and core types. Each area registers its functions from its own file.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "lucid/core/tensor.h"
#include "lucid/graph/executable.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/hyper.h"

namespace pybind11::detail {

// Python bool / int / float (and NumPy scalars) -> lucid::Scalar.
template <>
struct type_caster<lucid::Scalar> {
  PYBIND11_TYPE_CASTER(lucid::Scalar, const_name("number"));
  bool load(handle src, bool) {
    if (!src) return false;
    PyObject* o = src.ptr();
    if (PyBool_Check(o)) {
      value = lucid::Scalar::boolean(o == Py_True);
      return true;
    }
    if (PyLong_Check(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) return false;
      value = lucid::Scalar(int64_t(v));
      return true;
    }
    if (PyFloat_Check(o)) {
      value = lucid::Scalar(PyFloat_AsDouble(o));
      return true;
    }
    // NumPy scalars
    if (pybind11::isinstance<pybind11::array>(src) || !hasattr(src, "dtype")) return false;
    const std::string kind = pybind11::str(src.attr("dtype").attr("kind"));
    if (kind == "b") {
      value = lucid::Scalar::boolean(PyObject_IsTrue(o));
      return true;
    }
    if (kind == "i" || kind == "u") {
      value = lucid::Scalar(int64_t(PyLong_AsLongLong(pybind11::int_(pybind11::reinterpret_borrow<pybind11::object>(src)).ptr())));
      return true;
    }
    if (kind == "f") {
      value = lucid::Scalar(PyFloat_AsDouble(pybind11::float_(pybind11::reinterpret_borrow<pybind11::object>(src)).ptr()));
      return true;
    }
    return false;
  }
  static handle cast(const lucid::Scalar& s, return_value_policy, handle) {
    switch (s.kind) {
      case lucid::Scalar::Kind::Bool: return pybind11::bool_(s.i != 0).release();
      case lucid::Scalar::Kind::Int: return pybind11::int_(s.i).release();
      default: return pybind11::float_(s.f).release();
    }
  }
};

}  // namespace pybind11::detail

namespace lucid::python {

namespace py = pybind11;

lucid::Device to_device(const py::handle& obj);  // str, lucid.device, or None -> cpu
py::array to_numpy(const Tensor& t);
Tensor from_numpy(py::array arr, bool copy);
// A param group dict's hyper-parameters (optim.cpp).
optim::Hyper group_hyper(const py::dict& group);

void init_errors(py::module_& m);
void init_tensor(py::module_& m);
void init_ops(py::module_& m);
void init_autograd(py::module_& m);
void init_nn(py::module_& m);
void init_optim(py::module_& m);
void init_compile(py::module_& m);
void init_checkpoint(py::module_& m);
void init_metal_plan(py::module_& m);
void init_cuda(py::module_& m);

// A compiler other than a device's, handed to GraphTracer.compile_with (the
// Metal plans run on the host, for tests).
struct GraphCompiler {
  graph::CompileFn fn;
  std::string name;
  bool optimize = true;  // run the graph passes first, as a device compile does
};

}  // namespace lucid::python
