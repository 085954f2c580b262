// Sorting and scans: the ArgSort, TopK, NonZero and Scan primitives and the
// public ops built on them (sort, argsort, topk, nonzero, cumsum, cumprod).
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

static std::vector<Tensor> no_grads(const std::vector<int>& argnums) { return std::vector<Tensor>(argnums.size()); }

// ----------------------------------------------------------------- ArgSort
std::string ArgSort::name() const { return "argsort"; }
std::vector<TensorMeta> ArgSort::infer(const std::vector<TensorMeta>& in) const {
  return {{in[0].shape, DType::Int64, in[0].device}};
}
std::vector<Tensor> ArgSort::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                 const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

// PyTorch's sort results are laid out as empty_like(input): a dense input's
// strides (a transposed input gives transposed values and indices), a
// strided one's memory order, densely. Sorted where the input lies, along
// the same dim, and put back in its dim order.
static std::pair<Tensor, Tensor> sort_in_place_order(const Tensor& x, int axis, bool descending, bool with_values) {
  auto sorted = [&](const Tensor& t, int along) -> std::pair<Tensor, Tensor> {
    Tensor idx = call<ArgSort>({t}, along, descending);
    return {with_values ? gather(t, along, idx) : idx, idx};  // differentiable through gather
  };
  if (x.is_contiguous()) return sorted(x, axis);
  const bool dense = is_non_overlapping_and_dense(x.shape(), x.strides());
  for (size_t d = 0; d < x.shape().size() && !dense; ++d)
    if (x.strides()[d] == 0 && x.shape()[d] > 1) return sorted(x, axis);  // broadcast: row-major
  const std::vector<int64_t> order = memory_order(x.shape(), x.strides());
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  auto [values, indices] = sorted(permute(x, order), int(inverse[size_t(axis)]));
  std::pair<Tensor, Tensor> out{permute(values, inverse), permute(indices, inverse)};
  for (Tensor* t : {&out.first, &out.second}) {
    t->impl()->view_base = nullptr;  // memory of its own, not a view
    if (dense) t->impl()->strides = x.strides();  // (its size-1 dims' strides too)
  }
  return out;
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  const int axis = normalize_axis(dim, x.ndim());
  if (x.ndim() == 0) return zeros({}, DType::Int64, x.device());
  return sort_in_place_order(x, axis, descending, false).second;
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  const int axis = normalize_axis(dim, x.ndim());
  if (x.ndim() == 0) return {clone(x), zeros({}, DType::Int64, x.device())};
  return sort_in_place_order(x, axis, descending, true);
}

// -------------------------------------------------------------------- TopK
std::string TopK::name() const { return "topk"; }
std::vector<TensorMeta> TopK::infer(const std::vector<TensorMeta>& in) const {
  Shape s = in[0].shape;
  s[size_t(axis)] = k;
  return {{s, DType::Int64, in[0].device}};
}
std::vector<Tensor> TopK::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                              const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  const int axis = normalize_axis(dim, x.ndim());
  LUCID_CHECK_T(TypeError, x.dtype() != DType::Bool, "topk(): not implemented for bool tensors (got ",
                meta_str(x.meta()), "); cast to an integer dtype first");
  const int64_t size = x.ndim() == 0 ? 1 : x.shape()[size_t(axis)];
  LUCID_CHECK(k >= 0 && k <= size, "topk(): selected index k out of range: k=", k, " for dimension ", dim,
              " of size ", size, " (input ", shape_str(x.shape()), ")");
  if (x.ndim() == 0) return {clone(x), zeros({}, DType::Int64, x.device())};  // PyTorch: k of 0 or 1 alike
  Tensor idx = call<TopK>({x}, axis, k, largest);
  return {gather(x, axis, idx), idx};
}

// ----------------------------------------------------------------- NonZero
std::string NonZero::name() const { return "nonzero"; }
std::vector<TensorMeta> NonZero::infer(const std::vector<TensorMeta>& in) const {
  return {{{count, int64_t(in[0].shape.size())}, DType::Int64, in[0].device}};
}
std::vector<Tensor> NonZero::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                 const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

Tensor nonzero(const Tensor& x) {
  if (x.is_symbolic())
    fail<Error>("nonzero(): the number of non-zero elements decides the result's shape, so it cannot be traced "
                "into a compiled step; compute it outside the step (or use a mask with where())");
  const Tensor count = sum(cast(x, DType::Bool), {}, false, DType::Int64);
  const int64_t n = *to_device(count, Device{}).data<int64_t>("nonzero");  // a read-back on a device
  return call<NonZero>({x}, n);
}

// -------------------------------------------------------------------- Scan
std::string Scan::name() const {
  return std::string(op == ScanOp::Sum ? "cumsum" : "cumprod") + (reverse ? "(reverse)" : "");
}
std::vector<TensorMeta> Scan::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(TypeError, in[0].dtype != DType::Bool, "internal: ", name(), " of a bool tensor");
  return {in[0]};
}

std::vector<Tensor> Scan::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                              const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& g = cot[0];
  // The adjoint of a scan is the scan in the other direction.
  auto back_sum = [&](const Tensor& t) { return call<Scan>({t}, ScanOp::Sum, axis, !reverse); };
  if (op == ScanOp::Sum) return {back_sum(g)};
  // cumprod: dL/dx_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j. Before the first
  // zero that is back_sum(g * y)_k / x_k (PyTorch's formula); at the first
  // zero it is back_sum(g * y')_k with that zero replaced by one in y'; after
  // it the products hold the zero, so nothing.
  const Tensor& x = in[0];
  const Tensor& y = out[0];
  const Tensor one = ones_like(x);
  const Tensor is_zero = eq(x, zeros_like(x));
  const Tensor zeros_so_far = call<Scan>({cast(is_zero, DType::Int64)}, ScanOp::Sum, axis, reverse);
  const Tensor before_zero = eq(zeros_so_far, zeros_like(zeros_so_far));
  const Tensor first_zero = logical_and(is_zero, eq(zeros_so_far, ones_like(zeros_so_far)));
  const Tensor y_skip = call<Scan>({where(first_zero, one, x)}, ScanOp::Prod, axis, reverse);
  const Tensor plain = div(back_sum(mul(g, y)), where(before_zero, x, one));
  const Tensor at_zero = back_sum(mul(g, y_skip));
  return {where(before_zero, plain, where(first_zero, at_zero, wrap_scalar(0.0, g)))};
}

static Tensor scan(ScanOp op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const int axis = normalize_axis(dim, x.ndim());
  Tensor in = x;
  if (dtype) in = cast(in, *dtype);
  else if (!is_floating(in.dtype())) in = cast(in, DType::Int64);  // PyTorch: integers and bool accumulate in int64
  LUCID_CHECK_T(TypeError, in.dtype() != DType::Bool, op == ScanOp::Sum ? "cumsum" : "cumprod",
                "(): dtype=bool is not supported; use an integer or floating dtype");
  if (in.ndim() == 0) return in.same(x) ? clone(in) : in;
  return call<Scan>({in}, op, axis, false);
}
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return scan(ScanOp::Sum, x, dim, dtype); }
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return scan(ScanOp::Prod, x, dim, dtype); }

}  // namespace lucid
