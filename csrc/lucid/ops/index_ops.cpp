// Indexing primitives (Gather, ScatterAdd, IndexSelect, IndexAdd) and the
// indexing ops built on them, including NumPy-style advanced indexing.
#include <algorithm>

#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

static void check_index_dtype(const char* op, const TensorMeta& idx) {
  LUCID_CHECK_T(TypeError, idx.dtype == DType::Int64 || idx.dtype == DType::Int32, op,
                "(): Expected dtype int64 for index, got ", dtype_name(idx.dtype));
}

// ------------------------------------------------------------------ Gather
std::string Gather::name() const { return "gather"; }
std::vector<TensorMeta> Gather::infer(const std::vector<TensorMeta>& in) const {
  check_index_dtype("gather", in[1]);
  LUCID_CHECK(in[1].shape.size() == in[0].shape.size(), "gather(): Index tensor must have the same number of "
              "dimensions as input tensor (index ", shape_str(in[1].shape), ", input ", shape_str(in[0].shape), ")");
  for (size_t d = 0; d < in[0].shape.size(); ++d)
    LUCID_CHECK(int(d) == axis || in[1].shape[d] <= in[0].shape[d], "gather(): Size does not match at dimension ", d,
                " expected index ", shape_str(in[1].shape), " to be smaller than self ", shape_str(in[0].shape),
                " apart from dimension ", axis);
  return {{in[1].shape, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Gather::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {scatter_add(zeros(in[0].shape(), cot[0].dtype(), cot[0].device()), axis, in[1], cot[0])};
}

static Tensor gather_impl(const Tensor& x, int64_t dim, const Tensor& index, const std::string& loss) {
  if (x.ndim() == 0) normalize_axis(dim, 0);  // the dim is checked first, as PyTorch does
  if (x.ndim() == 0) return reshape(call<Gather>({reshape(x, {1}), reshape(index, {1})}, 0, loss), index.shape());
  return call<Gather>({x, index}, normalize_axis(dim, x.ndim()), loss);
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return gather_impl(x, dim, index, {}); }
Tensor gather_targets(const Tensor& logp, int64_t dim, const Tensor& target, const std::string& loss) {
  return gather_impl(logp, dim, target, loss);
}

// -------------------------------------------------------------- ScatterAdd
std::string ScatterAdd::name() const { return accumulate ? "scatter_add" : "scatter"; }
std::vector<TensorMeta> ScatterAdd::infer(const std::vector<TensorMeta>& in) const {
  check_index_dtype(accumulate ? "scatter_add" : "scatter", in[1]);
  LUCID_CHECK(in[1].shape.size() == in[0].shape.size() && in[2].shape.size() == in[0].shape.size(),
              name(), "(): Index tensor must have the same number of dimensions as self and src");
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    LUCID_CHECK(in[1].shape[d] <= in[2].shape[d], name(), "(): Expected index ", shape_str(in[1].shape),
                " to be smaller than src ", shape_str(in[2].shape));
    LUCID_CHECK(int(d) == axis || in[1].shape[d] <= in[0].shape[d], name(), "(): Expected index ",
                shape_str(in[1].shape), " to be smaller than self ", shape_str(in[0].shape), " apart from dimension ",
                axis);
  }
  return {in[0]};
}
std::vector<Tensor> ScatterAdd::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                    const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& g = cot[0];
  const Tensor& idx = in[1];
  return grads_for(argnums, [&](int i) -> Tensor {
    if (i == 2) {
      Tensor gs = gather(g, axis, idx);
      if (gs.shape() != in[2].shape()) {  // src larger than index: the rest gets no gradient
        std::vector<int64_t> pads;
        for (int64_t d = in[2].ndim() - 1; d >= 0; --d) {
          pads.push_back(0);
          pads.push_back(in[2].shape()[d] - gs.shape()[d]);
        }
        gs = pad(gs, pads, 0.0);
      }
      return gs;
    }
    if (accumulate) return g;
    // Overwritten positions get no gradient.
    return scatter(g, axis, idx, zeros(idx.shape(), g.dtype(), g.device()));
  });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return call<ScatterAdd>({x, index, cast(src, x.dtype())}, normalize_axis(dim, x.ndim()), true);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor s = src.ndim() == 0 ? broadcast_to(src, index.shape()) : src;
  return call<ScatterAdd>({x, index, cast(s, x.dtype())}, normalize_axis(dim, x.ndim()), false);
}

// ----------------------------------------------------------- ScatterReduce
static const char* scatter_reduce_op_name(ScatterReduceOp op) {
  switch (op) {
    case ScatterReduceOp::Sum: return "sum";
    case ScatterReduceOp::Prod: return "prod";
    case ScatterReduceOp::Mean: return "mean";
    case ScatterReduceOp::Amax: return "amax";
    case ScatterReduceOp::Amin: return "amin";
  }
  return "?";
}

std::string ScatterReduce::name() const {
  return std::string("scatter_reduce(") + scatter_reduce_op_name(op) + (include_self ? ")" : ", exclude self)");
}
std::vector<TensorMeta> ScatterReduce::infer(const std::vector<TensorMeta>& in) const {
  check_index_dtype("scatter_reduce", in[1]);
  LUCID_CHECK(in[1].shape.size() == in[0].shape.size() && in[2].shape.size() == in[0].shape.size(),
              "scatter_reduce(): Index tensor must have the same number of dimensions as self and src");
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    LUCID_CHECK(in[1].shape[d] <= in[2].shape[d], "scatter_reduce(): Expected index ", shape_str(in[1].shape),
                " to be smaller than src ", shape_str(in[2].shape));
    LUCID_CHECK(int(d) == axis || in[1].shape[d] <= in[0].shape[d], "scatter_reduce(): Expected index ",
                shape_str(in[1].shape), " to be smaller than self ", shape_str(in[0].shape), " apart from dimension ",
                axis);
  }
  return {in[0]};
}

// PyTorch's gradients (scatter_reduce_backward): ties of amax/amin share the
// gradient evenly; a product's gradient is formed without dividing by a zero.
std::vector<Tensor> ScatterReduce::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                       const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &self = in[0], &index = in[1], &result = out[0], &g = cot[0];
  // src may be larger than index: only its leading block was read.
  Tensor src = in[2];
  if (src.shape() != index.shape())
    for (int64_t d = 0; d < src.ndim(); ++d) src = narrow(src, d, 0, index.shape()[d]);
  const Tensor zero = scalar_tensor(0.0, self.dtype(), self.device());
  const Tensor one = scalar_tensor(1.0, self.dtype(), self.device());
  auto at_index = [&](const Tensor& t) { return gather(t, axis, index); };
  Tensor grad_self, grad_src;
  switch (op) {
    case ScatterReduceOp::Sum:
      grad_self = g;
      grad_src = at_index(g);
      break;
    case ScatterReduceOp::Mean: {
      Tensor n = include_self ? ones_like(self) : zeros_like(self);
      n = scatter_add(n, axis, index, ones_like(src));
      n = where(eq(n, zero), one, n);
      grad_self = div(g, n);
      grad_src = div(at_index(g), at_index(n));
      break;
    }
    case ScatterReduceOp::Prod: {
      // self's zeros left out of the product it is divided by
      const Tensor masked_self = where(eq(self, zero), one, self);
      grad_self = div(mul(g, scatter_reduce(masked_self, axis, index, src, "prod", include_self)), masked_self);
      // A src element that is the only zero at its position: the product of the others.
      const Tensor src_zero = eq(src, zero);
      const Tensor zeros_there = at_index(scatter_add(zeros_like(self), axis, index, cast(src_zero, self.dtype())));
      const Tensor single_zero = logical_and(src_zero, eq(zeros_there, one));
      const Tensor others = scatter_reduce(self, axis, index, where(single_zero, one, src), "prod", include_self);
      grad_src = where(single_zero, at_index(mul(g, others)),
                       div(at_index(mul(g, result)), where(src_zero, one, src)));
      break;
    }
    case ScatterReduceOp::Amax:
    case ScatterReduceOp::Amin: {
      const Tensor self_is_result = eq(self, result), src_is_result = eq(src, at_index(result));
      const Tensor n = scatter_add(cast(self_is_result, self.dtype()), axis, index, cast(src_is_result, self.dtype()));
      const Tensor shared = div(g, n);
      grad_self = where(self_is_result, shared, zero);
      grad_src = where(src_is_result, at_index(shared), zero);
      break;
    }
  }
  // Written positions did not read self.
  if (!include_self) grad_self = scatter(grad_self, axis, index, zeros(index.shape(), g.dtype(), g.device()));
  if (grad_src.shape() != in[2].shape()) {
    std::vector<int64_t> pads;
    for (int64_t d = in[2].ndim() - 1; d >= 0; --d) {
      pads.push_back(0);
      pads.push_back(in[2].shape()[d] - grad_src.shape()[d]);
    }
    grad_src = pad(grad_src, pads, 0.0);
  }
  return grads_for(argnums, [&](int i) { return i == 0 ? grad_self : grad_src; });
}

static ScatterReduceOp scatter_reduce_op(const std::string& reduce) {
  if (reduce == "sum") return ScatterReduceOp::Sum;
  if (reduce == "prod") return ScatterReduceOp::Prod;
  if (reduce == "mean") return ScatterReduceOp::Mean;
  if (reduce == "amax") return ScatterReduceOp::Amax;
  if (reduce == "amin") return ScatterReduceOp::Amin;
  fail<InvalidArgument>("reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

static Tensor scatter_reduce_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                                  ScatterReduceOp op, bool include_self, const char* caller) {
  LUCID_CHECK(src.dtype() == x.dtype(), caller, "(): Expected self.dtype to be equal to src.dtype");
  LUCID_CHECK_T(NotImplementedError, !(op == ScatterReduceOp::Mean && x.dtype() == DType::Bool), caller,
                "(): reduce='mean' is not implemented for 'Bool'");
  if (x.ndim() == 0) {
    normalize_axis(dim, 0);
    const Tensor r = call<ScatterReduce>({reshape(x, {1}), reshape(index, {1}), reshape(src, {1})}, 0, op,
                                         include_self);
    return reshape(r, Shape{});
  }
  return call<ScatterReduce>({x, index, src}, normalize_axis(dim, x.ndim()), op, include_self);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  return scatter_reduce_impl(x, dim, index, src, scatter_reduce_op(reduce), include_self, "scatter_reduce");
}

// index_reduce is scatter_reduce with the index vector spread over source's other dims.
Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self) {
  LUCID_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  normalize_axis(dim, x.ndim());  // PyTorch checks the dim first
  LUCID_CHECK_T(IndexError, index.ndim() <= 1, "index_reduce_(): Index is supposed to be a vector, but got dim: ",
                index.ndim(), " with type: ", dtype_name(index.dtype()), " and size: ", shape_str(index.shape()));
  LUCID_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
              "index_reduce_(): Expected dtype int32/int64 for index but got: ", dtype_name(index.dtype()));
  LUCID_CHECK(source.dtype() == x.dtype(), "index_reduce_(): self (", dtype_name(x.dtype()), ") and source (",
              dtype_name(source.dtype()), ") must have the same scalar type");
  LUCID_CHECK(source.ndim() == x.ndim() || (source.ndim() <= 1 && x.ndim() <= 1),
              "index_reduce_(): Source/destination tensor must have same slice shapes. Destination slice shape: ",
              shape_str(x.shape()), " and source slice shape: ", shape_str(source.shape()));
  if (x.ndim() == 0 || source.ndim() == 0)
    return reshape(index_reduce(reshape(x, {x.numel()}), 0, reshape(index, {index.numel()}),
                                reshape(source, {source.numel()}), reduce, include_self),
                   x.shape());
  const int axis = normalize_axis(dim, x.ndim());
  const int64_t n = index.numel();
  LUCID_CHECK(source.shape()[axis] == n, "index_reduce_(): Number of indices (", n,
              ") should be equal to source.size(dim): (", source.shape()[axis], "), for dim: ", dim);
  for (int64_t d = 0; d < x.ndim(); ++d)
    LUCID_CHECK(d == axis || source.shape()[d] == x.shape()[d],
                "index_reduce_(): Source/destination tensor must have same slice shapes. Destination slice shape: ",
                shape_str(x.shape()), " and source slice shape: ", shape_str(source.shape()));
  Shape along(size_t(x.ndim()), 1);
  along[size_t(axis)] = n;
  const Tensor spread = broadcast_to(reshape(index, along), source.shape());
  return scatter_reduce_impl(x, axis, spread, source, scatter_reduce_op(reduce), include_self, "index_reduce");
}

// ------------------------------------------------------------- IndexSelect
std::string IndexSelect::name() const { return "index_select"; }
std::vector<TensorMeta> IndexSelect::infer(const std::vector<TensorMeta>& in) const {
  check_index_dtype("index_select", in[1]);
  LUCID_CHECK_T(IndexError, in[1].shape.size() == 1, "index_select(): Index is supposed to be a vector, got ",
                shape_str(in[1].shape));
  TensorMeta m = in[0];
  m.shape[axis] = in[1].shape[0];
  return {m};
}
std::vector<Tensor> IndexSelect::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                     const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {index_add(zeros(in[0].shape(), cot[0].dtype(), cot[0].device()), axis, in[1], cot[0])};
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, const std::string& caller) {
  Tensor idx = index.ndim() == 0 ? reshape(index, {1}) : index;
  if (x.ndim() == 0) {  // PyTorch: a 0-d input stays 0-d (the index holds one element)
    normalize_axis(dim, 0);
    LUCID_CHECK_T(IndexError, index.numel() == 1, caller, "(): Index to scalar can have only 1 value, got ",
                  index.numel(), " value(s)");
    return reshape(call<IndexSelect>({reshape(x, {1}), idx}, 0, caller), Shape{});
  }
  return call<IndexSelect>({x, idx}, normalize_axis(dim, x.ndim()), caller);
}

std::string IndexAdd::name() const { return "index_add"; }
std::vector<TensorMeta> IndexAdd::infer(const std::vector<TensorMeta>& in) const {
  check_index_dtype("index_add", in[1]);
  LUCID_CHECK_T(IndexError, in[1].shape.size() == 1, "index_add(): Index is supposed to be a vector, got ",
                shape_str(in[1].shape));
  Shape expect = in[0].shape;
  expect[axis] = in[1].shape[0];
  LUCID_CHECK(in[2].shape == expect, "index_add(): source of shape ", shape_str(in[2].shape), " does not match ",
              shape_str(expect));
  return {in[0]};
}
std::vector<Tensor> IndexAdd::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                  const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  return grads_for(argnums, [&](int i) { return i == 0 ? cot[0] : index_select(cot[0], axis, in[1]); });
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (x.ndim() == 0) {  // PyTorch: a 0-d input takes a 0-d source at its one index, as a 1-element vector would
    normalize_axis(dim, 0);
    LUCID_CHECK(src.ndim() == 0, "source tensor shape must match self tensor shape, excluding the specified "
                "dimension. Got self.shape = [] source.shape = ", shape_str(src.shape()));
    LUCID_CHECK_T(IndexError, index.numel() == 1, "Dimension specified as 0 but tensor has no dimensions");
    return reshape(index_add(reshape(x, {1}), 0, reshape(index, {1}), reshape(src, {1})), Shape{});
  }
  return call<IndexAdd>({x, index, cast(src, x.dtype())}, normalize_axis(dim, x.ndim()));
}

// ------------------------------------------------------- composite indexing
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  LUCID_CHECK_T(TypeError, mask.dtype() == DType::Bool, "masked_fill only supports boolean masks, but got mask with "
                "dtype ", dtype_name(mask.dtype()));
  LUCID_CHECK(value.ndim() == 0, "masked_fill only supports a 0-dimensional value tensor, but got tensor with ",
              value.ndim(), " dimension(s).");
  // Out of place, x and mask broadcast against each other (PyTorch); the
  // in-place form's write-back rejects a result wider than x. Row-major
  // as PyTorch's (a contiguous clone, then the fill).
  RowMajorResults row_major;
  return where(mask, cast(value, x.dtype()), x);
}

// A concrete index's values on the host in row-major order, wherever it
// lives and whatever its layout (a column of nonzero() is a strided view),
// for checks the host makes before an op runs.
static Tensor host_values(const Tensor& index) { return contiguous(to_device(index, Device{})); }

Tensor one_hot(const Tensor& index, int64_t num_classes) {
  LUCID_CHECK_T(TypeError, index.dtype() == DType::Int64, "one_hot is only applicable to index tensor of type int64");
  // Classes are read on the host: a concrete index (a constant captured by a
  // compiled step included) is checked even while a step is traced, where
  // amin/amax would be recorded instead of run.
  if (num_classes == -1) {
    LUCID_CHECK(index.numel() > 0, "Can not infer total number of classes from empty tensor.");
    const Tensor host = host_values(index);
    const int64_t* p = host.data<int64_t>("one_hot with inferred num_classes");
    const auto [lo, hi] = std::minmax_element(p, p + index.numel());
    LUCID_CHECK(*lo >= 0, "one_hot: Class values must be non-negative.");
    num_classes = *hi + 1;
  } else if (!index.is_symbolic() && index.numel() > 0) {
    // Out-of-range classes would silently give all-zero rows.
    const Tensor host = host_values(index);
    const int64_t* p = host.data<int64_t>();
    const auto [lo, hi] = std::minmax_element(p, p + index.numel());
    LUCID_CHECK(*lo >= 0, "one_hot: Class values must be non-negative.");
    LUCID_CHECK(*hi < num_classes, "one_hot: Class values must be smaller than num_classes.");
  }
  Tensor classes = arange(0, double(num_classes), 1, DType::Int64, index.device());
  return cast(eq(unsqueeze(index, -1), classes), DType::Int64);
}

// Linear positions into x.flatten(0, k-1) for index tensors over x's first k
// dims (negative indices wrap); the bounds check needs concrete indices.
static Tensor linear_index(const Tensor& x, const std::vector<Tensor>& indices) {
  LUCID_CHECK_T(IndexError, int64_t(indices.size()) <= x.ndim(), "too many indices for tensor of dimension ",
                x.ndim(), " (got ", indices.size(), ")");
  // The index tensors broadcast together (PyTorch's IndexError and message where they do not).
  Shape common;
  for (const Tensor& idx : indices) {
    bool fits = true;
    const Shape& s = idx.shape();
    for (size_t i = 0; i < std::min(s.size(), common.size()); ++i) {
      const int64_t a = common[common.size() - 1 - i], b = s[s.size() - 1 - i];
      fits &= a == b || a == 1 || b == 1;
    }
    if (!fits) {
      std::string shapes;
      for (const Tensor& t : indices) shapes += (shapes.empty() ? "" : ", ") + shape_str(t.shape());
      fail<IndexError>("shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
    }
    common = broadcast_shapes(common, s);
  }
  // An empty result reads no element, and PyTorch checks no bound then.
  bool selects_nothing = numel(common) == 0;
  for (size_t d = indices.size(); d < x.shape().size(); ++d) selects_nothing |= x.shape()[d] == 0;
  Tensor lin;
  for (size_t k = 0; k < indices.size(); ++k) {
    Tensor idx = cast(indices[k], DType::Int64);
    const int64_t size = x.shape()[k];
    LUCID_CHECK_T(IndexError, size > 0 || numel(common) == 0, "index is out of bounds for dimension with size 0");
    if (!idx.is_symbolic()) {
      if (!selects_nothing) {
        const Tensor host = host_values(idx);
        const int64_t* p = host.data<int64_t>();
        for (int64_t i = 0; i < idx.numel(); ++i)
          LUCID_CHECK_T(IndexError, p[i] >= -size && p[i] < size, "index ", p[i], " is out of bounds for dimension ",
                        k, " with size ", size);
      }
      // x_cuda[cpu_index] is allowed, as in PyTorch: the index moves to x's device.
      if (idx.device() != x.device()) idx = to_device(idx, x.device());
    }
    Tensor size_t_ = scalar_tensor(size, DType::Int64, x.device());
    idx = where(lt(idx, scalar_tensor(int64_t(0), DType::Int64, x.device())), add(idx, size_t_), idx);
    lin = lin.defined() ? add(mul(lin, size_t_), idx) : idx;
  }
  return lin;
}

// x.flatten(0, k-1): the leading dims' product spelled out (-1 cannot be
// inferred when a trailing dim is 0).
static Shape flattened_lead(const Tensor& x, size_t k) {
  Shape flat{1};
  for (size_t d = 0; d < k; ++d) flat[0] *= x.shape()[d];
  flat.insert(flat.end(), x.shape().begin() + int64_t(k), x.shape().end());
  return flat;
}

Tensor index(const Tensor& x, const std::vector<Tensor>& indices) {
  const size_t k = indices.size();
  Tensor lin = linear_index(x, indices);
  Shape rest(x.shape().begin() + k, x.shape().end());
  Shape out = lin.shape();
  out.insert(out.end(), rest.begin(), rest.end());
  const Tensor flat = reshape(x, flattened_lead(x, k));
  // An empty result reads nothing (its indices go unchecked, as in PyTorch); an
  // empty slice of x keeps it in the graph (a zero gradient, not none).
  if (numel(out) == 0) return reshape(narrow(flat, 0, 0, 0), out);
  Tensor picked = index_select(flat, 0, reshape(lin, {lin.numel()}));
  return reshape(picked, out);
}

Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  const size_t k = indices.size();
  Tensor lin = linear_index(x, indices);
  Shape rest(x.shape().begin() + k, x.shape().end());
  Tensor xf = reshape(x, flattened_lead(x, k));
  Shape vshape = lin.shape();
  vshape.insert(vshape.end(), rest.begin(), rest.end());
  Tensor v = cast(broadcast_to(values, vshape), x.dtype());
  Tensor lin1 = reshape(lin, {lin.numel()});
  Shape vflat{lin1.numel()};
  vflat.insert(vflat.end(), rest.begin(), rest.end());
  v = reshape(v, vflat);
  if (numel(vshape) == 0) {
    // Writes nothing (its indices go unchecked, as in PyTorch); the values
    // stay in the graph with a zero gradient, as PyTorch's, through an
    // index_add of no rows.
    const Tensor none = Tensor::empty({0}, DType::Int64, x.device());
    return reshape(index_add(xf, 0, none, narrow(v, 0, 0, 0)), x.shape());
  }
  Tensor out;
  if (accumulate) {
    out = index_add(xf, 0, lin1, v);
  } else {
    // scatter along dim 0 with the row index broadcast over the rest
    Shape ishape{lin1.numel()};
    for (size_t d = 0; d < rest.size(); ++d) ishape.push_back(1);
    Tensor idx = broadcast_to(reshape(lin1, ishape), vflat);
    out = scatter(xf, 0, idx, v);
  }
  return reshape(out, x.shape());
}

}  // namespace lucid
