// Core errors -> Python exceptions, messages unchanged.
#include "bindings.h"

namespace lucid::python {

void init_errors(py::module_& m) {
  static py::exception<InvalidArgument> invalid(m, "InvalidArgument", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      py::set_error(invalid, e.what());
    } catch (const TypeError& e) {
      py::set_error(PyExc_TypeError, e.what());
    } catch (const IndexError& e) {
      py::set_error(PyExc_IndexError, e.what());
    } catch (const NotImplementedError& e) {
      py::set_error(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) {
      py::set_error(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace lucid::python
