#include "lucid/ops/primitive.h"

namespace lucid {

std::vector<Tensor> Primitive::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<int>&) const {
  fail<NotImplementedError>("the derivative of '", name(), "' is not implemented");
}

std::vector<Tensor> Primitive::decompose(const std::vector<Tensor>&) const {
  fail<NotImplementedError>("'", name(), "' has no decomposition into other primitives");
}

}  // namespace lucid
