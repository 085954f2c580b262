#include "lucid/ops/primitive.h"

namespace lucid {

std::vector<Tensor> Primitive::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<int>&) const {
  fail<NotImplementedError>("the derivative of '", name(), "' is not implemented");
}

}  // namespace lucid
