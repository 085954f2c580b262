#include "bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Lucid's C++ core";
  lucid::python::init_errors(m);
  lucid::python::init_tensor(m);
  lucid::python::init_ops(m);
  lucid::python::init_autograd(m);
  lucid::python::init_nn(m);
  lucid::python::init_optim(m);
  lucid::python::init_compile(m);
  lucid::python::init_checkpoint(m);
  lucid::python::init_metal_plan(m);
}
