// lucid._C bindings for compile.
#include "bindings.h"

namespace lucid::python {

void init_compile(py::module_& m) {}

}  // namespace lucid::python
