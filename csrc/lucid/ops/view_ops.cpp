// Strided views and the primitives that let writes through views reach the
// memory they share: AsStrided / AsStridedScatter (a storage's elements as a
// 1-D tensor), StridedView (diagonal, unfold), and autograd's records of
// in-place writes through views (ViewScatter, ViewOfBase).
#include <algorithm>

#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

namespace {

// Smallest and one past the largest element offset a layout reaches (an
// empty layout reaches nothing: {offset, offset}).
std::pair<int64_t, int64_t> extent(const Layout& l) {
  if (numel(l.shape) == 0) return {l.offset, l.offset};
  int64_t lo = l.offset, hi = l.offset;
  for (size_t d = 0; d < l.shape.size(); ++d) {
    const int64_t span = (l.shape[d] - 1) * l.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi + 1};
}

void check_within(const Layout& l, int64_t n, const char* what) {
  if (numel(l.shape) == 0) return;
  const auto [lo, hi] = extent(l);
  LUCID_CHECK(lo >= 0 && hi <= n, what, ": layout (size ", shape_str(l.shape),
              ", stride ", shape_str(l.strides), ", offset ", l.offset, ") reaches outside ", n, " elements");
}

// Whether `l` is all `n` elements of a storage in row-major order.
bool covers_all(const Layout& l, int64_t n) {
  return l.offset == 0 && numel(l.shape) == n && is_contiguous(l.shape, l.strides);
}

// A base-shaped tensor <-> the 1-D storage holding it at `base`.
Tensor to_storage(const Tensor& t, const Layout& base, int64_t n) {
  if (covers_all(base, n)) return reshape(t, {n});
  return as_strided_scatter(zeros({n}, t.dtype(), t.device()), t, base, false);
}
Tensor from_storage(const Tensor& flat, const Layout& base, int64_t n) {
  if (covers_all(base, n)) return reshape(flat, base.shape);
  return as_strided_flat(flat, base);
}

}  // namespace

// --------------------------------------------------------------- AsStrided
std::string AsStrided::name() const { return "as_strided"; }
std::vector<TensorMeta> AsStrided::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK(in[0].shape.size() == 1, "as_strided: expected the 1-D elements of a storage, got shape ",
              shape_str(in[0].shape));
  check_within(layout, in[0].shape[0], "as_strided");
  return {{layout.shape, in[0].dtype, in[0].device}};
}
std::vector<Tensor> AsStrided::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                   const std::vector<Tensor>& cot, const std::vector<int>&) const {
  // Elements the layout reaches more than once (expand, unfold) add up.
  const Tensor& g = cot[0];
  return {as_strided_scatter(zeros(in[0].shape(), g.dtype(), g.device()), g, layout, true)};
}
std::optional<Layout> AsStrided::view_layout(const Layout& in) const {
  Layout out{layout.shape, layout.strides, in.offset + layout.offset * in.strides[0]};
  for (auto& s : out.strides) s *= in.strides[0];
  return out;
}

Tensor as_strided_flat(const Tensor& flat, const Layout& layout) {
  if (covers_all(layout, flat.numel()) && layout.shape == flat.shape()) return flat;
  return call<AsStrided>({flat}, layout);
}

// -------------------------------------------------------- AsStridedScatter
std::string AsStridedScatter::name() const { return accumulate ? "as_strided_scatter_add" : "as_strided_scatter"; }
std::vector<TensorMeta> AsStridedScatter::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK(in[0].shape.size() == 1, "as_strided_scatter: expected the 1-D elements of a storage, got shape ",
              shape_str(in[0].shape));
  LUCID_CHECK(in[1].shape == layout.shape, "as_strided_scatter: src of shape ", shape_str(in[1].shape),
              " does not match the layout's shape ", shape_str(layout.shape));
  check_within(layout, in[0].shape[0], "as_strided_scatter");
  return {in[0]};
}
std::vector<Tensor> AsStridedScatter::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                          const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& g = cot[0];
  return grads_for(argnums, [&](int i) {
    if (i == 1) return as_strided_flat(g, layout);
    if (accumulate) return g;
    return as_strided_scatter(g, zeros(layout.shape, g.dtype(), g.device()), layout, false);
  });
}

Tensor as_strided_scatter(const Tensor& flat, const Tensor& src, const Layout& layout, bool accumulate) {
  Tensor v = cast(broadcast_to(src, layout.shape), flat.dtype());
  if (!accumulate && covers_all(layout, flat.numel())) return reshape(contiguous(v), flat.shape());
  return call<AsStridedScatter>({flat, v}, layout, accumulate);
}

// ------------------------------------------------------------- StridedView
std::string StridedView::name() const { return op; }
std::vector<TensorMeta> StridedView::infer(const std::vector<TensorMeta>& in) const {
  return {{shape, in[0].dtype, in[0].device}};
}
std::optional<Layout> StridedView::view_layout(const Layout& in) const {
  Layout out{shape, Shape(shape.size(), 0), in.offset};
  for (size_t j = 0; j < shape.size(); ++j)
    for (size_t i = 0; i < in.strides.size(); ++i) out.strides[j] += coeffs[j][i] * in.strides[i];
  for (size_t i = 0; i < in.strides.size(); ++i) out.offset += offset_coeffs[i] * in.strides[i];
  return out;
}
std::vector<Tensor> StridedView::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                     const std::vector<Tensor>& cot, const std::vector<int>&) const {
  // The view's elements in a row-major input, added up where they repeat.
  const Shape& s = in[0].shape();
  const Layout rel = *view_layout(contiguous_layout(s));
  const Tensor& g = cot[0];
  const int64_t n = numel(s);
  return {reshape(as_strided_scatter(zeros({n}, g.dtype(), g.device()), g, rel, true), s)};
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t nd = x.ndim();
  // PyTorch wraps the dims first: on fewer than 2 dims one of them is out of range
  const int d1 = normalize_axis(dim1, nd), d2 = normalize_axis(dim2, nd);
  LUCID_CHECK(nd >= 2, "diagonal dimensions requires at least 2 dimensions, but got ", nd);
  LUCID_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t n1 = x.shape()[d1], n2 = x.shape()[d2];
  int64_t len = offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2);
  len = std::max<int64_t>(len, 0);
  Shape shape;
  std::vector<Shape> coeffs;
  Shape offset_coeffs(size_t(nd), 0);
  for (int d = 0; d < nd; ++d) {
    if (d == d1 || d == d2) continue;
    shape.push_back(x.shape()[d]);
    Shape c(size_t(nd), 0);
    c[d] = 1;
    coeffs.push_back(c);
  }
  shape.push_back(len);
  Shape c(size_t(nd), 0);
  c[d1] = 1;
  c[d2] = 1;
  coeffs.push_back(c);
  if (len > 0) (offset >= 0 ? offset_coeffs[d2] : offset_coeffs[d1]) = offset >= 0 ? offset : -offset;
  return call<StridedView>({x}, "diagonal", shape, coeffs, offset_coeffs);
}

Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  const int64_t nd = std::max<int64_t>(x.ndim(), 1);
  const int d = normalize_axis(dim, nd);
  const int64_t n = x.ndim() == 0 ? 1 : x.shape()[d];
  LUCID_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  LUCID_CHECK(size <= n, "maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
  LUCID_CHECK(step > 0, "step is ", step, " but must be > 0");
  if (x.ndim() == 0) return size == 0 ? narrow(reshape(x, {1}), 0, 0, 0) : reshape(x, {1});  // [] or [x]
  Shape shape = x.shape();
  shape[d] = (n - size) / step + 1;
  shape.push_back(size);
  std::vector<Shape> coeffs;
  for (int64_t j = 0; j < x.ndim(); ++j) {
    Shape c(size_t(x.ndim()), 0);
    c[j] = j == d ? step : 1;
    coeffs.push_back(c);
  }
  Shape last(size_t(x.ndim()), 0);
  last[d] = 1;
  coeffs.push_back(last);
  return call<StridedView>({x}, "unfold", shape, coeffs, Shape(size_t(x.ndim()), 0));
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  LUCID_CHECK_T(IndexError, x.ndim() > 0, "select() cannot be applied to a 0-dim tensor.");
  const int d = normalize_axis(dim, x.ndim());
  const int64_t size = x.shape()[d];
  LUCID_CHECK_T(IndexError, index >= -size && index < size, "select(): index ", index,
                " out of range for tensor of size ", shape_str(x.shape()), " at dimension ", d);
  if (index < 0) index += size;
  Shape out = x.shape(), strides = x.strides();
  out.erase(out.begin() + d);
  strides.erase(strides.begin() + d);
  return detail::with_unit_strides(reshape(narrow(x, d, index, 1), out), strides);
}

Tensor as_strided(const Tensor& x, const Shape& size, const Shape& stride, std::optional<int64_t> storage_offset) {
  LUCID_CHECK(size.size() == stride.size(), "mismatch in length of strides and shape");
  for (auto s : size) LUCID_CHECK(s >= 0, "as_strided: negative size ", s);
  for (auto s : stride) LUCID_CHECK(s >= 0, "as_strided: negative strides are not supported, got ", shape_str(stride));
  const int64_t off = storage_offset.value_or(x.offset());
  LUCID_CHECK(off >= 0, "Tensor: invalid storage offset ", off);
  // Addressed through a contiguous tensor over the same memory that holds
  // every element the layout reaches: x itself, or the tensor x views.
  Layout want{size, stride, off};
  if (numel(size) == 0)  // reaches no element: any strides and offset do (PyTorch's)
    return call<AsStrided>({narrow(reshape(contiguous(x), {x.numel()}), 0, 0, 0)}, Layout{size, stride, 0});
  const auto [lo, hi] = extent(want);
  for (const Tensor& t : {x, x.is_view() ? Tensor(x.impl()->view_base) : Tensor()}) {
    if (!t.defined() || !t.is_contiguous()) continue;
    if (lo < t.offset() || hi > t.offset() + t.numel()) continue;
    want.offset -= t.offset();
    return call<AsStrided>({reshape(t, {t.numel()})}, want);
  }
  fail<NotImplementedError>("as_strided: the layout (size ", shape_str(size), ", stride ", shape_str(stride),
                            ", storage offset ", off, ") reaches elements outside the contiguous tensor it views; "
                            "call .contiguous() first");
}

// ------------------------------------------------------------- ViewScatter
std::string ViewScatter::name() const { return "CopySlices"; }
std::vector<TensorMeta> ViewScatter::infer(const std::vector<TensorMeta>& in) const { return {in[0]}; }
std::vector<Tensor> ViewScatter::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                     const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  // In the storage: the view's elements got the new contents, the rest of
  // the base kept the old ones.
  const Tensor g = to_storage(cot[0], base, storage_numel);
  return grads_for(argnums, [&](int i) {
    if (i == 1) return contiguous(as_strided_flat(g, view));
    Tensor cleared = as_strided_scatter(g, zeros(view.shape, g.dtype(), g.device()), view, false);
    return from_storage(cleared, base, storage_numel);
  });
}

// -------------------------------------------------------------- ViewOfBase
std::string ViewOfBase::name() const { return "AsStridedBackward"; }
std::vector<TensorMeta> ViewOfBase::infer(const std::vector<TensorMeta>& in) const {
  return {{view.shape, in[0].dtype, in[0].device}};
}
std::vector<Tensor> ViewOfBase::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                    const std::vector<Tensor>& cot, const std::vector<int>&) const {
  const Tensor& g = cot[0];
  Tensor flat = as_strided_scatter(zeros({storage_numel}, g.dtype(), g.device()), g, view, true);
  return {contiguous(from_storage(flat, base, storage_numel))};
}

}  // namespace lucid
