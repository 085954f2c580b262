// Core errors -> Python exceptions, messages unchanged. Each kind is its
// Python counterpart (InvalidArgument is a ValueError) and also a
// RuntimeError, the kind PyTorch raises for nearly every failed op, so code
// written against PyTorch (`except RuntimeError`) catches Lucid's errors too.
#include <new>

#include "bindings.h"

namespace lucid::python {

static PyObject* new_error(py::module_& m, const char* name, PyObject* base) {
  py::tuple bases = py::make_tuple(py::handle(base), py::handle(PyExc_RuntimeError));
  PyObject* cls = PyErr_NewException((std::string("lucid.") + name).c_str(), bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;  // one reference kept for the life of the process
}

void init_errors(py::module_& m) {
  static PyObject* invalid = new_error(m, "InvalidArgument", PyExc_ValueError);
  static PyObject* type_error = new_error(m, "TypeError", PyExc_TypeError);
  static PyObject* index_error = new_error(m, "IndexError", PyExc_IndexError);
  static PyObject* out_of_memory = new_error(m, "OutOfMemoryError", PyExc_MemoryError);
  // torch.linalg.LinAlgError's shape: a RuntimeError and nothing else.
  static PyObject* linalg_error = [&] {
    PyObject* cls = PyErr_NewException("lucid.linalg.LinAlgError", PyExc_RuntimeError, nullptr);
    if (!cls) throw py::error_already_set();
    m.add_object("LinAlgError", py::handle(cls));
    return cls;
  }();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(type_error, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(index_error, e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(out_of_memory, e.what());
    } catch (const std::bad_alloc&) {  // a container of the core that could not grow
      PyErr_SetString(out_of_memory, "out of memory (std::bad_alloc)");
    } catch (const LinAlgError& e) {
      PyErr_SetString(linalg_error, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());  // already a RuntimeError
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace lucid::python
