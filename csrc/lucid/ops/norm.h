#pragma once
// Layer normalisation as one primitive per direction: the statistics and
// the normalised values in one pass over each row (instead of a chain of
// reductions and broadcasts), and the input gradient likewise. The affine
// part (weight, bias) stays ordinary ops, which fuse.
#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"  // LUCID_PRIMITIVE_COMMON / _ATTRS

namespace lucid {

// x -> (xhat, mean, rstd) over the last `ndims` dims: xhat = (x - mean) * rstd,
// rstd = 1 / sqrt(var + eps), biased variance; mean and rstd keep those dims
// with extent 1. Only xhat carries a gradient.
struct LayerNorm final : Primitive {
  int ndims;
  double eps;
  auto attrs() const { return std::tie(ndims, eps); }
  LayerNorm(int ndims, double eps) : Primitive(OpKind::LayerNorm), ndims(ndims), eps(eps) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  // The backward reads the input and the statistics, as PyTorch's: xhat may
  // be written in place (F.layer_norm(x, s).relu_()).
  bool saves_output(int i) const override { return i != 0; }
};

// (g, x, mean, rstd) -> dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// the means over the normalised dims, evaluated as PyTorch does:
// rstd * g + b * x + c, b = (sum(g) * mean - sum(g * x)) * rstd^3 / n,
// c = -b * mean - sum(g) * rstd / n. Its uncentred sums cancel against the
// saved mean where x_hat's rounding, amplified by rstd, would not (a row
// whose spread is far below sqrt(eps)).
struct LayerNormBackward final : Primitive {
  int ndims;
  auto attrs() const { return std::tie(ndims); }
  explicit LayerNormBackward(int ndims) : Primitive(OpKind::LayerNormBackward), ndims(ndims) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// Normalises `x` over its last `ndims` dims (no affine part).
Tensor layer_norm(const Tensor& x, int ndims, double eps);

}  // namespace lucid
