// lucid._C bindings for nn.
#include "bindings.h"

namespace lucid::python {

void init_nn(py::module_& m) {}

}  // namespace lucid::python
