// Draws from distributions with tensor parameters (the RandomParametric
// primitive: Gamma, Poisson, Binomial) and the reparameterisation gradients
// of Gamma and Dirichlet draws (ReparamGrad), with the public ops
// torch.distributions builds on: _standard_gamma, poisson, binomial,
// _standard_gamma_grad, _dirichlet_grad.
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

namespace {

const char* distribution_name(ParametricDistribution d) {
  switch (d) {
    case ParametricDistribution::Gamma: return "_standard_gamma";
    case ParametricDistribution::Poisson: return "poisson";
    case ParametricDistribution::Binomial: return "binomial";
  }
  return "?";
}

// Operands of one shape and one floating dtype (checked by infer()).
void check_same_meta(const std::vector<TensorMeta>& in, size_t first, const std::string& op) {
  for (size_t i = first; i < in.size(); ++i) {
    LUCID_CHECK_T(TypeError, is_floating(in[i].dtype), op, ": expected a floating-point tensor, got ",
                  dtype_name(in[i].dtype));
    LUCID_CHECK(in[i].shape == in[first].shape && in[i].dtype == in[first].dtype &&
                    in[i].device == in[first].device,
                op, ": the operands must have one shape, dtype and device");
  }
}

// `params` broadcast to one shape and cast to the first one's dtype.
std::vector<Tensor> common_operands(std::vector<Tensor> params, const char* op) {
  Shape shape = params[0].shape();
  for (const auto& p : params) {
    LUCID_CHECK_T(TypeError, is_floating(p.dtype()), op, " is not implemented for '", dtype_name(p.dtype()),
                  "' tensors: expected a floating-point tensor");
    shape = broadcast_shapes(shape, p.shape());
  }
  for (auto& p : params) p = broadcast_to(cast(p, params[0].dtype()), shape);
  return params;
}

Tensor draw(ParametricDistribution dist, std::vector<Tensor> params, const std::optional<Tensor>& key) {
  params = common_operands(std::move(params), distribution_name(dist));
  const Tensor k = key ? *key : random_key_tensor(uint64_t(params[0].numel()), params[0].device());
  std::vector<Tensor> inputs{k};
  inputs.insert(inputs.end(), params.begin(), params.end());
  return call<RandomParametric>(inputs, dist);
}

}  // namespace

// -------------------------------------------------------- RandomParametric
std::string RandomParametric::name() const { return distribution_name(dist); }
std::vector<TensorMeta> RandomParametric::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(TypeError, in[0].dtype == DType::Int64 && in[0].shape == Shape{2},
                name(), ": the key must be an int64 tensor of shape [2]");
  LUCID_CHECK(in.size() == (dist == ParametricDistribution::Binomial ? 3u : 2u), name(),
              ": wrong number of parameters");
  check_same_meta(in, 1, name());
  return {in[1]};
}
// PyTorch's derivatives: Gamma's is the implicit one, g * dx/dalpha; a
// Poisson draw's gradient is zero.
std::vector<Tensor> RandomParametric::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                          const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  return detail::grads_for(argnums, [&](int) {
    return dist == ParametricDistribution::Gamma ? mul(cot[0], standard_gamma_grad(in[1], out[0]))
                                                 : zeros_like(in[1]);
  });
}

// ------------------------------------------------------------- ReparamGrad
std::string ReparamGrad::name() const { return op == ReparamGradOp::StandardGamma ? "_standard_gamma_grad" : "_dirichlet_grad"; }
std::vector<TensorMeta> ReparamGrad::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK(in.size() == (op == ReparamGradOp::StandardGamma ? 2u : 3u), name(), ": wrong number of operands");
  check_same_meta(in, 0, name());
  return {in[0]};
}

// -------------------------------------------------------------- public ops
Tensor standard_gamma(const Tensor& concentration, const std::optional<Tensor>& key) {
  return draw(ParametricDistribution::Gamma, {concentration}, key);
}
Tensor poisson(const Tensor& rate, const std::optional<Tensor>& key) {
  return draw(ParametricDistribution::Poisson, {rate}, key);
}
Tensor binomial(const Tensor& count, const Tensor& prob, const std::optional<Tensor>& key) {
  return draw(ParametricDistribution::Binomial, {count, prob}, key);
}
Tensor standard_gamma_grad(const Tensor& concentration, const Tensor& sample) {
  const std::vector<Tensor> ops = common_operands({concentration, sample}, "_standard_gamma_grad");
  return call<ReparamGrad>(ops, ReparamGradOp::StandardGamma);
}
Tensor dirichlet_grad(const Tensor& x, const Tensor& concentration, const Tensor& total) {
  const std::vector<Tensor> ops = common_operands({x, concentration, total}, "_dirichlet_grad");
  return call<ReparamGrad>(ops, ReparamGradOp::Dirichlet);
}

}  // namespace lucid
