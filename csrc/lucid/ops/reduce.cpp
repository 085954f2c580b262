// Reductions: the Reduce and ArgReduce primitives and the public reductions
// (mean, var, std, logsumexp, norm are compositions, so their gradients come
// from the primitives').
#include <algorithm>
#include <cmath>
#include <optional>

#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

static const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "prod", "amax", "amin", "all", "any"};
  return names[int(op)];
}

static Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdim) {
  Shape out;
  for (int d = 0; d < int(in.size()); ++d) {
    bool r = false;
    for (int a : axes) r |= a == d;
    if (!r)
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor detail::unsqueeze_axes(const Tensor& t, const std::vector<int>& axes) {
  Shape s = t.shape();
  for (int a : axes) s.insert(s.begin() + a, 1);
  return reshape(t, s);
}

// ------------------------------------------------------------------ Reduce
std::string Reduce::name() const { return reduce_op_name(op); }
uint8_t Reduce::saved() const { return op == ReduceOp::Sum ? 0 : kSaveInputs | kSaveOutputs; }

std::vector<TensorMeta> Reduce::infer(const std::vector<TensorMeta>& in) const {
  DType dt = in[0].dtype;
  if (op == ReduceOp::All || op == ReduceOp::Any) dt = DType::Bool;
  if ((op == ReduceOp::Max || op == ReduceOp::Min) && in[0].numel() == 0)
    for (int a : axes)
      LUCID_CHECK_T(IndexError, in[0].shape[a] != 0, reduce_op_name(op), "(): Expected reduction dim ", a,
                    " to have non-zero size (input shape ", shape_str(in[0].shape), ")");
  return {{reduced_shape(in[0].shape, axes, keepdim), dt, in[0].device}};
}

std::vector<Tensor> Reduce::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& x = in[0];
  Tensor g = keepdim ? cot[0] : detail::unsqueeze_axes(cot[0], axes);
  switch (op) {
    case ReduceOp::Sum:
      return {broadcast_to(g, x.shape())};
    case ReduceOp::Prod: {
      // d/dx_i prod(x) = prod_{j != i} x_j: y / x_i where the slice has no
      // zero; at a lone zero, the product of the others; zero otherwise.
      Tensor y = keepdim ? out[0] : detail::unsqueeze_axes(out[0], axes);
      Tensor zero = wrap_scalar(0.0, x), one = wrap_scalar(1.0, x);
      Tensor is_zero = eq(x, zero);
      Tensor x_safe = where(is_zero, one, x);
      Tensor lone_zero = eq(sum(cast(is_zero, DType::Int64), detail::to_i64(axes), true),
                            scalar_tensor(int64_t(1), DType::Int64, x.device()));
      Tensor others = prod(x_safe, detail::to_i64(axes), true);
      Tensor d = where(is_zero, where(lone_zero, others, zeros_like(others)), div(y, x_safe));
      return {mul(g, d)};
    }
    case ReduceOp::Max: case ReduceOp::Min: {
      // Ties share the gradient evenly (PyTorch's amax/amin rule).
      Tensor y = keepdim ? out[0] : detail::unsqueeze_axes(out[0], axes);
      Tensor hit = cast(eq(x, y), x.dtype());
      Tensor count = sum(hit, detail::to_i64(axes), true);
      return {mul(div(g, count), hit)};
    }
    default:
      fail<Error>("the derivative of '", name(), "' is not defined");
  }
}

// The dims of x in memory order when x is a permutation of a row-major
// layout (a transpose, a permute): x == permute(y, order) with y row-major.
static std::optional<std::vector<int64_t>> dense_memory_order(const Tensor& x) {
  if (!is_non_overlapping_and_dense(x.shape(), x.strides())) return std::nullopt;
  return memory_order(x.shape(), x.strides());
}

static Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<int> axes;
  if (dims.empty()) {
    for (int d = 0; d < int(x.ndim()); ++d) axes.push_back(d);
  } else {
    axes = normalize_axes(dims, x.ndim());
    if (x.ndim() == 0) axes.clear();
  }
  if (!x.is_contiguous() && x.numel() > 0) {
    if (auto order = dense_memory_order(x)) {
      // A permuted tensor is reduced where it lies (the kernel reads
      // row-major memory); only the small result is put in x's dim order.
      std::vector<int> base_axes;
      std::vector<int64_t> inverse(order->size());
      for (size_t k = 0; k < order->size(); ++k) {
        inverse[size_t((*order)[k])] = int64_t(k);
        if (std::find(axes.begin(), axes.end(), int((*order)[k])) != axes.end()) base_axes.push_back(int(k));
      }
      Tensor r = permute(call<Reduce>({permute(x, *order)}, op, base_axes, true), inverse);
      if (!keepdim) r = squeeze(r, detail::to_i64(axes));
      Tensor out = contiguous(r);
      if (out.same(r)) {  // already in order: memory of its own, with PyTorch's row-major strides
        out.impl()->view_base = nullptr;
        out.impl()->strides = contiguous_strides(out.shape());
      }
      return out;
    }
  }
  return call<Reduce>({x}, op, axes, keepdim);
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, std::optional<DType> dtype) {
  Tensor in = x;
  if (dtype)
    in = cast(x, *dtype);
  else if (!is_floating(x.dtype()))
    in = cast(x, DType::Int64);  // integer sums accumulate in int64, like PyTorch
  return reduce(ReduceOp::Sum, in, dims, keepdim);
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(ReduceOp::Prod, is_floating(x.dtype()) ? x : cast(x, DType::Int64), dims, keepdim);
}

// The max of booleans is any(), the min all(), once the shape rule of Max
// has refused an empty reduced dim.
static bool bool_extreme(const Tensor& x, const std::vector<int64_t>& dims, ReduceOp op) {
  if (x.dtype() != DType::Bool) return false;
  Reduce(op, dims.empty() ? std::vector<int>() : normalize_axes(dims, x.ndim()), false)
      .infer({x.meta()});
  return true;
}
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (x.numel() == 0 && dims.empty()) return reduce(ReduceOp::Max, x, dims, keepdim);  // raises: no elements
  if (bool_extreme(x, dims, ReduceOp::Max)) return any(x, dims, keepdim);
  return reduce(ReduceOp::Max, x, dims, keepdim);
}
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (x.numel() == 0 && dims.empty()) return reduce(ReduceOp::Min, x, dims, keepdim);
  if (bool_extreme(x, dims, ReduceOp::Min)) return all(x, dims, keepdim);
  return reduce(ReduceOp::Min, x, dims, keepdim);
}
Tensor all(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(ReduceOp::All, cast(x, DType::Bool), dims, keepdim);
}
Tensor any(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(ReduceOp::Any, cast(x, DType::Bool), dims, keepdim);
}

static int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x.numel();
  int64_t n = 1;
  for (int a : normalize_axes(dims, x.ndim())) n *= x.ndim() == 0 ? 1 : x.shape()[a];
  return n;
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()),
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                "dtype. Got: ", dtype_name(x.dtype()));
  const int64_t n = reduced_count(x, dims);
  return div(sum(x, dims, keepdim), double(n));
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), "var(): input dtype must be floating point, got ",
                dtype_name(x.dtype()));
  const int64_t n = reduced_count(x, dims);
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor ss = sum(mul(centered, centered), dims, keepdim);
  const double dof = double(n) - correction;
  if (dof >= 0) return div(ss, dof);
  // Fewer than no degrees of freedom: PyTorch's value divides by 0 (inf,
  // or NaN for 0 / 0) while its gradient divides by the dof itself.
  const Tensor by_dof = div(ss, dof);
  return add(by_dof, sub(div(ss, 0.0), by_dof).detach());
}

// f(v) whose derivative is 0 where v == 0: PyTorch's std and norm backward
// at a zero result (a constant row, a zero vector); the chain rule through
// sqrt/pow there gives 0 * inf = NaN. The value is f(v) everywhere.
template <class F>
static Tensor zero_derivative_at_zero(const Tensor& v, F f) {
  const Tensor zero = wrap_scalar(0.0, v);
  const Tensor at_zero = eq(v, zero);
  return where(at_zero, zero, f(where(at_zero, wrap_scalar(1.0, v), v)));
}

Tensor std_(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  return zero_derivative_at_zero(var(x, dims, correction, keepdim), [](const Tensor& v) { return sqrt(v); });
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor xf = is_floating(x.dtype()) ? x : cast(x, default_float_dtype());
  // Shift by the (gradient-free) max for stability; infinite maxes shift by 0.
  // (an empty reduction has no max: its sum is 0 and the result -inf)
  Tensor m = xf.numel() == 0 ? zeros_like(sum(xf.detach(), dims, true)) : amax(xf.detach(), dims, true);
  m = where(isfinite(m), m, zeros_like(m));
  Tensor s = log(sum(exp(sub(xf, m)), dims, true));
  Tensor r = add(s, m);
  if (!keepdim) r = squeeze(r, dims.empty() ? std::optional<std::vector<int64_t>>() : dims);
  if (!keepdim && dims.empty()) r = reshape(r, {});
  return r;
}

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  LUCID_CHECK_T(TypeError, is_floating(x.dtype()), "norm(): input dtype must be floating point, got ",
                dtype_name(x.dtype()));
  if (std::isinf(p)) return p > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  if (p == 0) {
    // The count of non-zeros keeps x in its history with a zero gradient, as
    // PyTorch's does: floor's derivative is 0 (and finite x times 0 is 0).
    const Tensor nonzero = cast(ne(x, wrap_scalar(0.0, x)), x.dtype());
    const Tensor zero_gradient = mul(floor(where(isfinite(x), x, zeros_like(x))), wrap_scalar(0.0, x));
    return sum(add(nonzero, zero_gradient), dims, keepdim);
  }
  if (p == 1) return sum(abs(x), dims, keepdim);
  if (p == 2) return zero_derivative_at_zero(sum(mul(x, x), dims, keepdim), [](const Tensor& v) { return sqrt(v); });
  return zero_derivative_at_zero(sum(pow(abs(x), p), dims, keepdim),
                                 [p](const Tensor& v) { return pow(v, 1.0 / p); });
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.ndim() - int64_t(shape.size());
  LUCID_CHECK(lead >= 0, "sum_to: cannot reduce ", shape_str(x.shape()), " to ", shape_str(shape));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) axes.push_back(d);
  Tensor r = axes.empty() ? x : sum(x, axes, true);
  return reshape(r, shape);
}

// --------------------------------------------------------------- ArgReduce
std::string ArgReduce::name() const { return op == ArgReduceOp::ArgMax ? "argmax" : "argmin"; }
std::vector<TensorMeta> ArgReduce::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(IndexError, in[0].shape.empty() || in[0].shape[axis] != 0, name(), "(): Expected reduction dim ",
                axis, " to have non-zero size (input shape ", shape_str(in[0].shape), ")");
  return {{in[0].shape.empty() ? Shape{} : reduced_shape(in[0].shape, {axis}, keepdim), DType::Int64, in[0].device}};
}
std::vector<Tensor> ArgReduce::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<int>& argnums) const {
  return std::vector<Tensor>(argnums.size());
}

static Tensor arg_reduce(ArgReduceOp op, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  LUCID_CHECK_T(TypeError, x.dtype() != DType::Bool, op == ArgReduceOp::ArgMax ? "argmax" : "argmin",
                "(): does not support bool input; cast it first (x.int())");
  if (!dim) {
    Tensor r = call<ArgReduce>({reshape(x, {-1})}, op, 0, false);
    if (keepdim) r = reshape(r, Shape(size_t(x.ndim()), 1));
    return r;
  }
  return call<ArgReduce>({x}, op, normalize_axis(*dim, x.ndim()), keepdim);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ArgReduceOp::ArgMax, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ArgReduceOp::ArgMin, x, dim, keepdim);
}

static std::pair<Tensor, Tensor> extreme_dim(ArgReduceOp op, const Tensor& x, int64_t dim, bool keepdim) {
  const int axis = normalize_axis(dim, x.ndim());
  if (x.ndim() == 0) return {clone(x), zeros({}, DType::Int64, x.device())};
  Tensor idx = call<ArgReduce>({x}, op, axis, true);
  Tensor values = gather(x, axis, idx);  // differentiable through gather
  if (!keepdim) {
    values = squeeze(values, std::vector<int64_t>{axis});
    idx = squeeze(idx, std::vector<int64_t>{axis});
  }
  return {values, idx};
}
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(ArgReduceOp::ArgMax, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(ArgReduceOp::ArgMin, x, dim, keepdim);
}

}  // namespace lucid
