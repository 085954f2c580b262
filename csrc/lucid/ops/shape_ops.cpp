// Layout primitives (Reshape, Permute, Broadcast, Slice, SliceScatter,
// Concat) and the public shape ops built on them.
#include <algorithm>
#include <numeric>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

// ----------------------------------------------------------------- Reshape
std::string Reshape::name() const { return "reshape"; }
std::vector<TensorMeta> Reshape::infer(const std::vector<TensorMeta>& in) const {
  return {{shape, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Reshape::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                 const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {reshape(cot[0], in[0].shape())};
}
std::optional<Layout> Reshape::view_layout(const Layout& in) const {
  Layout out{shape, {}, in.offset};
  if (!view_strides(in.shape, in.strides, shape, out.strides)) return std::nullopt;
  return out;
}

static Shape infer_shape(const Tensor& x, Shape shape) {
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      LUCID_CHECK(infer_at < 0, "only one dimension can be inferred");
      infer_at = int64_t(i);
    } else {
      LUCID_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i], " at index ", i, " of shape ",
                  shape_str(shape));
      if (__builtin_mul_overflow(known, shape[i], &known))
        fail("Storage size calculation overflowed with sizes=", shape_str(shape));
    }
  }
  if (infer_at >= 0) {
    LUCID_CHECK(known != 0 && x.numel() % known == 0, "shape '", shape_str(shape), "' is invalid for input of size ",
                x.numel());
    shape[infer_at] = x.numel() / known;
  }
  LUCID_CHECK(numel(shape) == x.numel(), "shape '", shape_str(shape), "' is invalid for input of size ", x.numel());
  return shape;
}

Tensor reshape(const Tensor& x, Shape shape) {
  shape = infer_shape(x, std::move(shape));
  if (shape == x.shape()) return x;
  Shape strides;
  // A view where the memory order allows one (PyTorch's rule), else a copy.
  if (view_strides(x.shape(), x.strides(), shape, strides)) return call<Reshape>({x}, shape);
  // The copy is the result's own memory: not a view of anything (PyTorch's
  // _unsafe_view of a clone).
  Tensor out = call<Reshape>({contiguous_copy(x)}, shape);
  out.impl()->view_base = nullptr;
  return out;
}

Tensor view(const Tensor& x, Shape shape) {
  shape = infer_shape(x, std::move(shape));
  Shape strides;
  LUCID_CHECK_T(Error, view_strides(x.shape(), x.strides(), shape, strides),
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
                "two contiguous subspaces). Use .reshape(...) instead.");
  return call<Reshape>({x}, shape);
}

Tensor alias(const Tensor& x) {
  std::vector<int> identity(size_t(x.ndim()));
  std::iota(identity.begin(), identity.end(), 0);
  return call<Permute>({x}, identity);  // keeps every stride (a Reshape would recompute size-1 dims')
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : contiguous_copy(x); }

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  const int s = normalize_axis(start_dim, x.ndim()), e = normalize_axis(end_dim, x.ndim());
  if (x.ndim() == 0) return reshape(x, {1});
  LUCID_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  Shape out(x.shape().begin(), x.shape().begin() + s);
  int64_t n = 1;
  for (int d = s; d <= e; ++d) n *= x.shape()[d];
  out.push_back(n);
  out.insert(out.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, out);
}

Tensor detail::with_unit_strides(const Tensor& view, const Shape& strides) {
  LUCID_CHECK(int64_t(strides.size()) == view.ndim(), "with_unit_strides: ", strides.size(), " strides for ",
              view.ndim(), " dims");
  for (size_t d = 0; d < strides.size(); ++d)
    LUCID_CHECK(view.numel() == 0 || view.shape()[d] == 1 || view.strides()[d] == strides[d], "with_unit_strides: dim ",
                d, " of size ", view.shape()[d], " has stride ", view.strides()[d]);
  view.impl()->strides = strides;
  return view;
}

Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims) {
  Shape out, strides;  // the kept dims keep their strides (PyTorch's)
  std::vector<int> axes;
  if (dims) axes = normalize_axes(*dims, x.ndim());
  for (int d = 0; d < int(x.ndim()); ++d) {
    const bool chosen = !dims || std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!(chosen && x.shape()[d] == 1)) out.push_back(x.shape()[d]), strides.push_back(x.strides()[d]);
  }
  if (out == x.shape()) return reshape(x, out);
  return detail::with_unit_strides(reshape(x, out), strides);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int d = normalize_axis(dim, x.ndim() + 1);
  Shape s = x.shape(), strides = x.strides();
  // PyTorch's stride for the new dim: that of the dim it is put before, times its size
  strides.insert(strides.begin() + d, d < x.ndim() ? x.shape()[d] * x.strides()[d] : 1);
  s.insert(s.begin() + d, 1);
  return detail::with_unit_strides(reshape(x, s), strides);
}

// ----------------------------------------------------------------- Permute
std::string Permute::name() const { return "permute"; }
std::vector<TensorMeta> Permute::infer(const std::vector<TensorMeta>& in) const {
  Shape s;
  for (int p : perm) s.push_back(in[0].shape[p]);
  return {{s, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Permute::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>& cot,
                                 const std::vector<int>&) const {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = int64_t(i);
  return {permute(cot[0], inv)};
}
std::optional<Layout> Permute::view_layout(const Layout& in) const {
  Layout out{{}, {}, in.offset};
  for (int p : perm) {
    out.shape.push_back(in.shape[p]);
    out.strides.push_back(in.strides[p]);
  }
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  LUCID_CHECK(int64_t(perm.size()) == x.ndim(), "permute(sparse_coo): number of dimensions in the tensor input does "
              "not match the length of the desired ordering of dimensions i.e. input.dim() = ", x.ndim(),
              " is not equal to len(dims) = ", perm.size());
  std::vector<int> p;
  std::vector<bool> seen(perm.size(), false);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int a = normalize_axis(perm[i], x.ndim());
    LUCID_CHECK(!seen[a], "permute(): duplicate dims are not allowed.");
    seen[a] = true;
    identity &= a == int(i);
    p.push_back(a);
  }
  if (identity) return x;
  return call<Permute>({x}, p);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  normalize_axis(d0, x.ndim());
  normalize_axis(d1, x.ndim());
  if (x.ndim() == 0) return x;
  std::vector<int64_t> perm(size_t(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[normalize_axis(d0, x.ndim())], perm[normalize_axis(d1, x.ndim())]);
  return permute(x, perm);
}

// --------------------------------------------------------------- Broadcast
std::string Broadcast::name() const { return "broadcast_to"; }
std::vector<TensorMeta> Broadcast::infer(const std::vector<TensorMeta>& in) const {
  return {{shape, in[0].dtype, in[0].device}};
}
std::vector<Tensor> Broadcast::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                   const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {sum_to(cot[0], in[0].shape())};
}
std::optional<Layout> Broadcast::view_layout(const Layout& in) const {
  Layout out{shape, Shape(shape.size(), 0), in.offset};
  const size_t lead = shape.size() - in.shape.size();
  for (size_t i = 0; i < in.shape.size(); ++i)
    out.strides[lead + i] = in.shape[i] == shape[lead + i] ? in.strides[i] : 0;
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  LUCID_CHECK(shape.size() >= x.shape().size(), "the number of sizes provided (", shape.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", x.ndim(), ")");
  const size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i)
    LUCID_CHECK(x.shape()[i] == 1 || x.shape()[i] == shape[lead + i], "the expanded size of the tensor (",
                shape[lead + i], ") must match the existing size (", x.shape()[i], ") at non-singleton dimension ",
                lead + i, ".  Target sizes: ", shape_str(shape), ".  Tensor sizes: ", shape_str(x.shape()));
  return call<Broadcast>({x}, shape);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  const size_t lead = s.size() >= x.shape().size() ? s.size() - x.shape().size() : 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == -1) {
      LUCID_CHECK(i >= lead, "expand: -1 is not allowed in a leading, non-existing dimension");
      s[i] = x.shape()[i - lead];
    }
  return broadcast_to(x, s);
}

// ------------------------------------------------------------------- Slice
Shape SliceSpec::out_shape() const {
  Shape s;
  for (size_t d = 0; d < starts.size(); ++d)
    s.push_back(stops[d] <= starts[d] ? 0 : (stops[d] - starts[d] - 1) / steps[d] + 1);  // ceil, without overflow
  return s;
}

std::string Slice::name() const { return "slice"; }
std::vector<TensorMeta> Slice::infer(const std::vector<TensorMeta>& in) const {
  return {{spec.out_shape(), in[0].dtype, in[0].device}};
}
std::vector<Tensor> Slice::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&, const std::vector<Tensor>& cot,
                               const std::vector<int>&) const {
  const Tensor& x = in[0];
  return {slice_scatter(zeros(x.shape(), cot[0].dtype(), x.device()), cot[0], spec.starts, spec.stops, spec.steps)};
}
std::optional<Layout> Slice::view_layout(const Layout& in) const {
  Layout out{spec.out_shape(), in.strides, in.offset};
  // An empty result keeps the offset of where it starts, as PyTorch's does
  // (at most one past the last element: starts are clamped to the size).
  for (size_t d = 0; d < in.shape.size(); ++d) {
    out.offset += spec.starts[d] * in.strides[d];
    out.strides[d] *= spec.steps[d];
  }
  return out;
}

static SliceSpec make_spec(const Shape& shape, const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                           const std::vector<int64_t>& steps) {
  LUCID_CHECK(starts.size() == shape.size() && stops.size() == shape.size() && steps.size() == shape.size(),
              "slice: one start/stop/step per dimension expected");
  SliceSpec s{starts, stops, steps};
  for (size_t d = 0; d < shape.size(); ++d) {
    LUCID_CHECK(steps[d] > 0, "slice step must be positive");
    s.starts[d] = std::clamp<int64_t>(starts[d], 0, shape[d]);
    s.stops[d] = std::clamp<int64_t>(stops[d], s.starts[d], shape[d]);
  }
  return s;
}

static bool is_full(const SliceSpec& s, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (s.starts[d] != 0 || s.stops[d] != shape[d] || s.steps[d] != 1) return false;
  return true;
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
             const std::vector<int64_t>& steps) {
  SliceSpec s = make_spec(x.shape(), starts, stops, steps);
  if (is_full(s, x.shape())) return x;
  return call<Slice>({x}, s);
}

std::string SliceScatter::name() const { return "slice_scatter"; }
std::vector<TensorMeta> SliceScatter::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK(in[1].shape == spec.out_shape(), "slice_scatter: src of shape ", shape_str(in[1].shape),
              " does not match the slice of shape ", shape_str(spec.out_shape()));
  return {in[0]};
}
std::vector<Tensor> SliceScatter::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                      const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& g = cot[0];
  return grads_for(argnums, [&](int i) {
    if (i == 1) return slice(g, spec.starts, spec.stops, spec.steps);
    return slice_scatter(g, zeros(spec.out_shape(), g.dtype(), g.device()), spec.starts, spec.stops, spec.steps);
  });
}

Tensor slice_scatter(const Tensor& base, const Tensor& src, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& stops, const std::vector<int64_t>& steps) {
  SliceSpec s = make_spec(base.shape(), starts, stops, steps);
  Tensor v = cast(broadcast_to(src, s.out_shape()), base.dtype());
  if (is_full(s, base.shape())) return contiguous_copy(v);
  return call<SliceScatter>({base, v}, s);
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  LUCID_CHECK(x.ndim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  const int d = normalize_axis(dim, x.ndim());
  const int64_t size = x.shape()[d];
  LUCID_CHECK_T(IndexError, start >= -size && start <= size, "start out of range (expected to be in range of [",
                -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  LUCID_CHECK(length >= 0, "narrow(): length must be non-negative.");
  LUCID_CHECK(length <= size - start, "start (", start, ") + length (", length, ") exceeds dimension size (", size,
              ").");
  std::vector<int64_t> starts(size_t(x.ndim()), 0), stops(x.shape()), steps(size_t(x.ndim()), 1);
  starts[d] = start;
  stops[d] = start + length;
  return slice(x, starts, stops, steps);
}

// ------------------------------------------------------------------ Concat
std::string Concat::name() const { return "cat"; }
std::vector<TensorMeta> Concat::infer(const std::vector<TensorMeta>& in) const {
  TensorMeta m = in[0];
  m.shape[axis] = 0;
  for (const auto& t : in) {
    LUCID_CHECK(t.shape.size() == in[0].shape.size(), "cat: tensors must have the same number of dimensions: got ",
                shape_str(in[0].shape), " and ", shape_str(t.shape));
    for (size_t d = 0; d < t.shape.size(); ++d)
      LUCID_CHECK(int(d) == axis || t.shape[d] == in[0].shape[d], "cat: sizes of tensors must match except in "
                  "dimension ", axis, ": got ", shape_str(in[0].shape), " and ", shape_str(t.shape));
    m.shape[axis] += t.shape[axis];
  }
  return {m};
}
std::vector<Tensor> Concat::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  std::vector<int64_t> offsets{0};
  for (const auto& t : in) offsets.push_back(offsets.back() + t.shape()[axis]);
  return grads_for(argnums, [&](int i) { return narrow(cot[0], axis, offsets[i], in[i].shape()[axis]); });
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  LUCID_CHECK(!xs.empty(), "cat(): expected a non-empty list of Tensors");
  // PyTorch accepts legacy 1-D empty tensors next to any shape: they become
  // empty slices of the others' shape (so they still get a gradient).
  DType dt = xs[0].dtype();
  for (const auto& t : xs) dt = promote_types(dt, t.dtype());
  auto legacy_empty = [](const Tensor& t) { return t.ndim() == 1 && t.numel() == 0; };
  const Tensor* like = nullptr;
  for (const auto& t : xs)
    if (!legacy_empty(t) && !like) like = &t;
  if (!like) return contiguous_copy(cast(xs[0], dt));
  LUCID_CHECK(like->ndim() > 0, "zero-dimensional tensor cannot be concatenated");
  const int axis = normalize_axis(dim, like->ndim());
  std::vector<Tensor> parts;
  for (const auto& t : xs) {
    if (legacy_empty(t) && like->ndim() != 1) {
      Shape s = like->shape();
      s[axis] = 0;
      parts.push_back(cast(reshape(t, s), dt));
    } else {
      LUCID_CHECK(t.ndim() > 0, "zero-dimensional tensor (at position ", parts.size(), ") cannot be concatenated");
      parts.push_back(cast(t, dt));
    }
  }
  if (parts.size() == 1) return contiguous_copy(parts[0]);
  return call<Concat>(parts, axis);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  LUCID_CHECK(!xs.empty(), "stack expects a non-empty TensorList");
  for (const auto& t : xs)
    LUCID_CHECK(t.shape() == xs[0].shape(), "stack expects each tensor to be equal size, but got ",
                shape_str(xs[0].shape()), " and ", shape_str(t.shape()));
  const int d = normalize_axis(dim, xs[0].ndim() + 1);
  std::vector<Tensor> parts;
  for (const auto& t : xs) parts.push_back(unsqueeze(t, d));
  return parts.size() == 1 ? contiguous_copy(parts[0]) : cat(parts, d);
}

// ------------------------------------------------------------------- Split
std::string Split::name() const { return "split_with_sizes"; }
std::vector<TensorMeta> Split::infer(const std::vector<TensorMeta>& in) const {
  const Shape& s = in[0].shape;
  LUCID_CHECK(axis >= 0 && axis < int(s.size()), "split_with_sizes: dimension ", axis, " out of range for a ",
              s.size(), "-d tensor");
  int64_t total = 0;
  for (int64_t n : sizes) {
    LUCID_CHECK(n >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                shape_str(sizes));
    total += n;
  }
  LUCID_CHECK(total == s[size_t(axis)], "split_with_sizes expects split_sizes to sum exactly to ", s[size_t(axis)],
              " (input tensor's size at dimension ", axis, "), but got split_sizes=", shape_str(sizes));
  std::vector<TensorMeta> out;
  for (int64_t n : sizes) {
    TensorMeta m = in[0];
    m.shape[size_t(axis)] = n;
    out.push_back(m);
  }
  return out;
}
std::vector<Tensor> Split::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                               const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {cat(cot, axis)};
}

std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  LUCID_CHECK(x.ndim() > 0, "split_with_sizes: expected a tensor with at least one dimension");
  return detail::call_multi<Split>({x}, normalize_axis(dim, x.ndim()), sizes);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  LUCID_CHECK(x.ndim() > 0, "split expects at least a 1-dimensional tensor");
  const int d = normalize_axis(dim, x.ndim());
  int64_t total = 0;
  for (auto s : sizes) {
    LUCID_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                shape_str(sizes));
    LUCID_CHECK(!__builtin_add_overflow(total, s, &total), "split_with_sizes: split_sizes ", shape_str(sizes),
                " overflow");
  }
  LUCID_CHECK(total == x.shape()[d], "split_with_sizes expects split_sizes to sum exactly to ", x.shape()[d],
              " (input tensor's size at dimension ", d, "), but got split_sizes=", shape_str(sizes));
  std::vector<Tensor> out;
  int64_t off = 0;
  for (auto s : sizes) {
    out.push_back(narrow(x, d, off, s));
    if (out.back().same(x)) out.back() = alias(x);  // a view of its own, however many pieces
    if (autograd::GradMode::is_enabled() && !out.back().is_symbolic())
      out.back().impl()->multi_output_view = "SplitBackward0";
    off += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  LUCID_CHECK(x.ndim() > 0, "split expects at least a 1-dimensional tensor");
  const int d = normalize_axis(dim, x.ndim());
  LUCID_CHECK(split_size > 0 || (split_size == 0 && x.shape()[d] == 0), "split expects split_size be non-negative, "
              "but got split_size=", split_size);
  std::vector<int64_t> sizes;
  for (int64_t off = 0; off < x.shape()[d]; off += sizes.back()) sizes.push_back(std::min(split_size, x.shape()[d] - off));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  LUCID_CHECK(x.ndim() > 0, "chunk expects at least a 1-dimensional tensor");
  LUCID_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int d = normalize_axis(dim, x.ndim());
  const int64_t size = x.shape()[d] / chunks + (x.shape()[d] % chunks != 0);  // ceil, without overflow
  if (size == 0) return split(x, std::vector<int64_t>(size_t(chunks), 0), d);  // PyTorch: `chunks` empty pieces
  return split(x, size, d);
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  LUCID_CHECK(x.ndim() >= 2, "tril: input tensor must have at least 2 dimensions");
  const int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  Tensor rows = reshape(arange(0, double(n), 1, DType::Int64, x.device()), {n, 1});
  Tensor cols = reshape(arange(0, double(m), 1, DType::Int64, x.device()), {1, m});
  Tensor keep = le(sub(cols, rows), scalar_tensor(diagonal, DType::Int64, x.device()));
  RowMajorResults row_major;  // as PyTorch's
  return where(keep, x, zeros({}, x.dtype(), x.device()));
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  LUCID_CHECK(x.ndim() >= 2, "triu: input tensor must have at least 2 dimensions");
  const int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  Tensor rows = reshape(arange(0, double(n), 1, DType::Int64, x.device()), {n, 1});
  Tensor cols = reshape(arange(0, double(m), 1, DType::Int64, x.device()), {1, m});
  Tensor keep = ge(sub(cols, rows), scalar_tensor(diagonal, DType::Int64, x.device()));
  RowMajorResults row_major;  // as PyTorch's
  return where(keep, x, zeros({}, x.dtype(), x.device()));
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  LUCID_CHECK(pads.size() % 2 == 0, "Padding length must be divisible by 2");
  LUCID_CHECK(int64_t(pads.size()) / 2 <= x.ndim(), "Padding length too large");
  // pads = (last_lo, last_hi, second_last_lo, ...); negative pads crop.
  Tensor cur = x;
  const size_t nd = size_t(x.ndim());
  std::vector<int64_t> starts(nd, 0), stops(x.shape()), steps(nd, 1);
  Shape out = x.shape();
  bool crop = false;
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const size_t d = nd - 1 - k;
    const int64_t lo = pads[2 * k], hi = pads[2 * k + 1];
    if (lo < 0) { starts[d] = -lo; crop = true; }
    if (hi < 0) { stops[d] = x.shape()[d] + hi; crop = true; }
    out[d] = x.shape()[d] + lo + hi;
    LUCID_CHECK(out[d] >= 0, "The input size ", x.shape()[d], ", plus negative padding ", lo, " and ", hi,
                " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
  }
  if (crop) cur = slice(cur, starts, stops, steps);
  std::vector<int64_t> dst_starts(nd, 0), dst_stops(out), dst_steps(nd, 1);
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const size_t d = nd - 1 - k;
    dst_starts[d] = std::max<int64_t>(pads[2 * k], 0);
    dst_stops[d] = dst_starts[d] + cur.shape()[d];
  }
  return slice_scatter(full(out, value, x.dtype(), x.device()), cur, dst_starts, dst_stops, dst_steps);
}

}  // namespace lucid
