// lucid._C bindings for optim.
#include "bindings.h"

namespace lucid::python {

void init_optim(py::module_& m) {}

}  // namespace lucid::python
