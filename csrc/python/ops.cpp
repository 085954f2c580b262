// The op surface of lucid._C: thin wrappers over ops.h. Python numbers
// arrive as lucid::Scalar and are wrapped with PyTorch's promotion rule.
#include <cstring>

#include "bindings.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/op_util.h"

namespace lucid::python {

using OptDims = std::optional<std::vector<int64_t>>;
static std::vector<int64_t> dims_or_all(const OptDims& d) { return d ? *d : std::vector<int64_t>{}; }
static const auto release = py::call_guard<py::gil_scoped_release>();

// In-place ops compute out of place, then write back (assign_). When history
// is recorded, the op reads a copy of self, so the saved input survives the
// write.
static Tensor source_for_inplace(const Tensor& self) {
  return autograd::GradMode::is_enabled() && self.requires_grad() ? contiguous_copy(self) : self;
}

// `t op number` (or `number op t`, as `fn` orders them) with the wrapped-
// number rules described in init_ops.
template <class F>
static Tensor with_number(const Tensor& t, const Scalar& number, bool true_division, bool opmath, const char* op,
                          F&& fn) {
  LUCID_CHECK_T(TypeError, !(std::string(op) == "sub" && number.kind == Scalar::Kind::Bool),
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead.");
  const DType dt = t.dtype();
  const bool half = dt == DType::Float16 || dt == DType::BFloat16;
  if ((true_division && !is_floating(dt)) || (opmath && half)) {
    const Tensor wide = cast(t, half ? DType::Float32 : default_float_dtype());
    Tensor r = fn(wide, wrap_scalar(number, wide));
    return half && r.dtype() == DType::Float32 ? cast(r, dt) : r;
  }
  return fn(t, wrap_scalar(number, t));
}

// PyTorch's view ops always return a new tensor, even where the view is
// the input itself (x.view(x.shape), x[:]): the core returns x there.
static Tensor new_view(const Tensor& x, const Tensor& result) { return result.same(x) ? alias(x) : result; }
static std::vector<Tensor> new_views(const Tensor& x, std::vector<Tensor> results) {
  for (auto& r : results) r = new_view(x, r);
  return results;
}

// The strides PyTorch gives x[key] for a key of basic items, each coded
// as kNewAxis (None), kDropDim (an int) or a slice's step (advanced
// indices count as full slices): it applies the items left to right, so a
// None takes its stride from the dim that follows it at that point.
constexpr int64_t kNewAxis = 0, kDropDim = -1;
static Shape indexed_strides(const Shape& shape, const Shape& strides, const std::vector<int64_t>& codes) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // size, stride
  for (size_t k = 0; k < shape.size(); ++k) dims.emplace_back(shape[k], strides[k]);
  size_t at = 0;
  for (const int64_t code : codes) {
    if (code == kNewAxis) {
      dims.insert(dims.begin() + std::ptrdiff_t(at), {1, at < dims.size() ? dims[at].first * dims[at].second : 1});
      ++at;
    } else if (code == kDropDim) {
      LUCID_CHECK(at < dims.size(), "_indexed_strides: more items than dims");
      dims.erase(dims.begin() + std::ptrdiff_t(at));
    } else {
      LUCID_CHECK(at < dims.size(), "_indexed_strides: more items than dims");
      dims[at].second *= code;
      ++at;
    }
  }
  Shape out;
  for (const auto& dim : dims) out.push_back(dim.second);
  return out;
}

// x[key] for keys of Python ints, slices (step > 0), None and one
// Ellipsis: what _tensor.py's _basic gives (a slice, then a reshape to the
// result's dims with PyTorch's strides for the size-1 ones), without its
// Python. None for any other key or one that would raise: the Python path
// takes those and raises PyTorch's errors.
static py::object basic_getitem(const Tensor& x, const py::handle& key) {
  struct Item {
    enum Kind { kNone, kInt, kSlice } kind;
    int64_t start = 0, stop = 0, step = 1;
  };
  const bool is_tuple = PyTuple_Check(key.ptr());
  const Py_ssize_t count = is_tuple ? PyTuple_GET_SIZE(key.ptr()) : 1;
  if (count > 64) return py::none();
  Item items[64 + 64];  // the key's items with its Ellipsis expanded (at most ndim <= 64 full slices)
  int n_items = 0, ellipsis_at = -1, consumed = 0;
  auto plain_slice = [](Item& it) { it = {Item::kSlice, 0, INT64_MAX, 1}; };
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* k = is_tuple ? PyTuple_GET_ITEM(key.ptr(), i) : key.ptr();
    Item& it = items[n_items++];
    if (k == Py_None) {
      it.kind = Item::kNone;
    } else if (k == Py_Ellipsis) {
      if (ellipsis_at >= 0) return py::none();
      ellipsis_at = n_items - 1;
    } else if (PyLong_CheckExact(k)) {
      int overflow = 0;
      it = {Item::kInt, PyLong_AsLongLongAndOverflow(k, &overflow), 0, 1};
      if (overflow) return py::none();
      ++consumed;
    } else if (PySlice_Check(k)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
        PyErr_Clear();
        return py::none();
      }
      if (step <= 0) return py::none();
      it = {Item::kSlice, start, stop, step};
      ++consumed;
    } else {
      return py::none();
    }
  }
  const int64_t ndim = x.ndim();
  if (consumed > ndim || ndim > 64) return py::none();
  if (ellipsis_at >= 0 || consumed < ndim) {  // the dims no item names take full slices, at the Ellipsis or last
    const int fill = int(ndim - consumed), at = ellipsis_at >= 0 ? ellipsis_at : n_items;
    const int tail = n_items - (ellipsis_at >= 0 ? at + 1 : at);
    std::memmove(items + at + fill, items + n_items - tail, sizeof(Item) * size_t(tail));
    for (int j = 0; j < fill; ++j) plain_slice(items[at + j]);
    n_items = at + fill + tail;
  }
  const Shape& shape = x.shape();
  std::vector<int64_t> starts, stops, steps;
  Shape out_shape;
  bool reshaped = false;
  int64_t d = 0;
  for (int j = 0; j < n_items; ++j) {
    Item& it = items[j];
    if (it.kind == Item::kNone) {
      out_shape.push_back(1);
      reshaped = true;
      continue;
    }
    const int64_t size = shape[size_t(d++)];
    if (it.kind == Item::kInt) {
      const int64_t i = it.start < 0 ? it.start + size : it.start;
      if (i < 0 || i >= size) return py::none();
      starts.push_back(i), stops.push_back(i + 1), steps.push_back(1);
      reshaped = true;
    } else {
      Py_ssize_t start = Py_ssize_t(it.start), stop = Py_ssize_t(it.stop);
      PySlice_AdjustIndices(Py_ssize_t(size), &start, &stop, Py_ssize_t(it.step));
      stop = std::max(stop, start);
      starts.push_back(start), stops.push_back(stop), steps.push_back(it.step);
      out_shape.push_back((int64_t(stop) - start + it.step - 1) / it.step);
    }
  }
  Tensor r;
  {
    py::gil_scoped_release unlocked;
    r = ndim ? new_view(x, slice(x, starts, stops, steps)) : alias(x);
    if (reshaped) {
      std::vector<int64_t> codes;
      for (int j = 0; j < n_items; ++j)
        codes.push_back(items[j].kind == Item::kNone ? kNewAxis : items[j].kind == Item::kInt ? kDropDim : items[j].step);
      Tensor v = reshape(r, out_shape);
      r = v.same(r) ? view(r, out_shape) : v;
      r.impl()->strides = indexed_strides(shape, x.strides(), codes);  // differ from the reshape's only on size-1 dims
    }
  }
  return py::cast(r);
}

void init_ops(py::module_& m) {
#define LUCID_UNARY(name) m.def(#name, [](const Tensor& x) { return name(x); }, release);
  LUCID_UNARY(neg) LUCID_UNARY(abs) LUCID_UNARY(sign) LUCID_UNARY(exp) LUCID_UNARY(log) LUCID_UNARY(log1p)
  LUCID_UNARY(expm1) LUCID_UNARY(sqrt) LUCID_UNARY(rsqrt) LUCID_UNARY(square) LUCID_UNARY(reciprocal)
  LUCID_UNARY(sin) LUCID_UNARY(cos) LUCID_UNARY(tanh) LUCID_UNARY(sigmoid) LUCID_UNARY(relu) LUCID_UNARY(silu)
  LUCID_UNARY(erf) LUCID_UNARY(floor) LUCID_UNARY(ceil) LUCID_UNARY(round) LUCID_UNARY(trunc)
  LUCID_UNARY(lgamma) LUCID_UNARY(digamma) LUCID_UNARY(trigamma) LUCID_UNARY(erfinv)
  LUCID_UNARY(logical_not) LUCID_UNARY(bitwise_not) LUCID_UNARY(isfinite) LUCID_UNARY(isnan) LUCID_UNARY(isinf)
  LUCID_UNARY(clone)
#undef LUCID_UNARY
  m.def("gelu", [](const Tensor& x, bool tanh_approx) { return gelu(x, tanh_approx); }, py::arg("x"),
        py::arg("tanh_approximation") = false, release);
  m.def("softplus", &softplus, py::arg("x"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0, release);

  // An op between a tensor and a Python number follows PyTorch's rules for
  // wrapped numbers: the number takes the tensor's dtype within its
  // category; true division meets an integer tensor in the default float type
  // with the number's full value; a bool number may not be subtracted. For a
  // 16-bit float tensor PyTorch's mul and div keep the number in float32
  // (opmath) and round the result once, where its add, sub and comparisons
  // round the number to the tensor's dtype first: `opmath` says which.
#define LUCID_BINARY(name, true_division, opmath)                                                         \
  m.def(#name, [](const Tensor& a, const Tensor& b) { return name(a, b); }, release);                     \
  m.def(#name, [](const Tensor& a, Scalar b) {                                                             \
    return with_number(a, b, true_division, opmath, #name,                                                \
                       [](const Tensor& t, const Tensor& n) { return name(t, n); });                      \
  }, release);                                                                                              \
  m.def(#name, [](Scalar a, const Tensor& b) {                                                             \
    return with_number(b, a, true_division, opmath, #name,                                                \
                       [](const Tensor& t, const Tensor& n) { return name(n, t); });                      \
  }, release);
  LUCID_BINARY(add, false, false) LUCID_BINARY(sub, false, false) LUCID_BINARY(mul, false, true)
  LUCID_BINARY(floor_divide, false, false) LUCID_BINARY(remainder, false, false) LUCID_BINARY(fmod, false, false)
  LUCID_BINARY(maximum, false, false) LUCID_BINARY(minimum, false, false)
  LUCID_BINARY(eq, false, false) LUCID_BINARY(ne, false, false) LUCID_BINARY(lt, false, false)
  LUCID_BINARY(le, false, false) LUCID_BINARY(gt, false, false) LUCID_BINARY(ge, false, false)
  LUCID_BINARY(logical_and, false, false) LUCID_BINARY(logical_or, false, false)
  LUCID_BINARY(logical_xor, false, false) LUCID_BINARY(div, true, true) LUCID_BINARY(atan2, true, true)
  LUCID_BINARY(bitwise_and, false, false) LUCID_BINARY(bitwise_or, false, false)
  LUCID_BINARY(bitwise_xor, false, false) LUCID_BINARY(bitwise_left_shift, false, false)
  LUCID_BINARY(bitwise_right_shift, false, false)
#undef LUCID_BINARY
  // A Python number exponent keeps its kind (ops::pow rejects integers to a
  // negative integer power, as PyTorch does).
  m.def("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, release);
  m.def("pow", [](const Tensor& a, Scalar b) { return pow(a, b); }, release);
  m.def("pow", [](Scalar a, const Tensor& b) { return pow(wrap_scalar(a, b), b); }, release);
  m.def("where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); }, release);
  m.def("where", [](const Tensor& c, const Tensor& a, Scalar b) { return where(c, a, wrap_scalar(b, a)); }, release);
  m.def("where", [](const Tensor& c, Scalar a, const Tensor& b) { return where(c, wrap_scalar(a, b), b); }, release);
  m.def("where", [](const Tensor& c, Scalar a, Scalar b) {
    Tensor ta = scalar_tensor(a, a.kind == Scalar::Kind::Float ? default_float_dtype()
                                 : (a.kind == Scalar::Kind::Int ? DType::Int64 : DType::Bool), c.device());
    return where(c, ta, wrap_scalar(b, ta));
  }, release);
  m.def("clamp", [](const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) { return clamp(x, lo, hi); },
        py::arg("x"), py::arg("min") = py::none(), py::arg("max") = py::none(), release);
  m.def("clamp_t", [](const Tensor& x, std::optional<Tensor> lo, std::optional<Tensor> hi) {
    return clamp(x, lo ? *lo : Tensor(), hi ? *hi : Tensor());
  }, py::arg("x"), py::arg("min") = py::none(), py::arg("max") = py::none(), release);
  m.def("wrap_scalar", &wrap_scalar, release);
  m.def("check_scalar_fits", [](Scalar v, DType dt, const std::string& op) { detail::check_scalar_fits(v, dt, op.c_str()); });
  m.def("result_type", &result_type);

  // creation
  m.def("full", [](const Shape& s, Scalar v, std::optional<DType> dt, const py::object& dev) {
    Device d = to_device(dev);
    py::gil_scoped_release g;
    return full(s, v, dt, d);
  }, py::arg("shape"), py::arg("value"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("arange", [](double start, double end, double step, DType dt, const py::object& dev) {
    return arange(start, end, step, dt, to_device(dev));
  });
  m.def("eye", [](int64_t n, int64_t mm, DType dt, const py::object& dev) { return eye(n, mm, dt, to_device(dev)); });
  m.def("rand", [](const Shape& s, DType dt, const py::object& dev) { return rand(s, dt, to_device(dev)); });
  m.def("randn", [](const Shape& s, DType dt, const py::object& dev) { return randn(s, dt, to_device(dev)); });
  m.def("random_key", [](uint64_t count, const py::object& dev) { return random_key_tensor(count, to_device(dev)); });
  m.def("random_uniform", [](const Shape& s, DType dt, const Tensor& key) { return random_uniform(s, dt, key); },
        release);
  m.def("random_normal", [](const Shape& s, DType dt, const Tensor& key) { return random_normal(s, dt, key); },
        release);
  m.def("standard_gamma", &standard_gamma, py::arg("concentration"), py::arg("key") = py::none(), release);
  m.def("poisson", &poisson, py::arg("rate"), py::arg("key") = py::none(), release);
  m.def("binomial", &binomial, py::arg("count"), py::arg("prob"), py::arg("key") = py::none(), release);
  m.def("standard_gamma_grad", &standard_gamma_grad, release);
  m.def("dirichlet_grad", &dirichlet_grad, release);
  m.def("manual_seed", &manual_seed);
  m.def("initial_seed", &initial_seed);
  m.def("cast", &cast, release);
  m.def("to_device", [](const Tensor& t, const py::object& dev) { return to_device(t, to_device(dev)); });

  // reductions
  m.def("sum", [](const Tensor& x, OptDims d, bool k, std::optional<DType> dt) { return sum(x, dims_or_all(d), k, dt); },
        py::arg("x"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none(), release);
#define LUCID_REDUCE(name)                                                                                 \
  m.def(#name, [](const Tensor& x, OptDims d, bool k) { return name(x, dims_or_all(d), k); }, py::arg("x"), \
        py::arg("dim") = py::none(), py::arg("keepdim") = false, release);
  LUCID_REDUCE(mean) LUCID_REDUCE(prod) LUCID_REDUCE(amax) LUCID_REDUCE(amin) LUCID_REDUCE(all) LUCID_REDUCE(any)
#undef LUCID_REDUCE
  m.def("var", [](const Tensor& x, OptDims d, double c, bool k) { return var(x, dims_or_all(d), c, k); },
        py::arg("x"), py::arg("dim") = py::none(), py::arg("correction") = 1.0, py::arg("keepdim") = false, release);
  m.def("std", [](const Tensor& x, OptDims d, double c, bool k) { return std_(x, dims_or_all(d), c, k); },
        py::arg("x"), py::arg("dim") = py::none(), py::arg("correction") = 1.0, py::arg("keepdim") = false, release);
  m.def("logsumexp", &logsumexp, py::arg("x"), py::arg("dim"), py::arg("keepdim") = false, release);
  m.def("norm", [](const Tensor& x, double p, OptDims d, bool k) { return norm(x, p, dims_or_all(d), k); },
        py::arg("x"), py::arg("p") = 2.0, py::arg("dim") = py::none(), py::arg("keepdim") = false, release);
  m.def("argmax", &argmax, py::arg("x"), py::arg("dim") = py::none(), py::arg("keepdim") = false, release);
  m.def("argmin", &argmin, py::arg("x"), py::arg("dim") = py::none(), py::arg("keepdim") = false, release);
  m.def("max_dim", &max_dim, release);
  m.def("min_dim", &min_dim, release);
  m.def("sum_to", &sum_to, release);

  m.def("matmul", &matmul, release);

  // shape (views)
  // A reshape that keeps the shape is a view (as PyTorch's): its size-1
  // dims' strides are recomputed.
  m.def("reshape", [](const Tensor& x, const Shape& s) {
    Tensor r = reshape(x, s);
    return r.same(x) ? view(x, s) : r;
  }, release);
  m.def("view", &view, release);
  m.def("alias", &alias, release);
  m.def("contiguous", &contiguous, release);
  // memory_format=torch.preserve_format for what Python builds (.to, the
  // *_like factories): `make` receives the tensor in its memory order.
  m.def("preserve_layout", [](const Tensor& t, const std::function<Tensor(const Tensor&)>& make) {
    return preserve_layout(t, make);
  });
  m.def("memory_order", [](const Tensor& t) { return memory_order(t.shape(), t.strides()); });
  m.def("in_memory_order", [](const Tensor& t, const std::vector<int64_t>& order,
                              const std::function<Tensor(const Tensor&)>& make) { return in_memory_order(t, order, make); });
  m.def("contiguous_copy", &contiguous_copy, release);
  // PyTorch's strides for a view whose size-1 dims (or all dims, when it is
  // empty) another derivation strides differently; they address nothing.
  m.def("_set_unit_strides", &detail::with_unit_strides);
  m.def("_reinterpret", [](const Tensor& x, DType dtype, const Shape& shape, const Shape& strides, int64_t offset) {
    return Tensor::reinterpret(x, dtype, Layout{shape, strides, offset});
  });
  m.def("flatten", [](const Tensor& x, int64_t s, int64_t e) { return new_view(x, flatten(x, s, e)); }, py::arg("x"),
        py::arg("start_dim") = 0, py::arg("end_dim") = -1, release);
  m.def("squeeze", [](const Tensor& x, std::optional<std::vector<int64_t>> d) { return new_view(x, squeeze(x, d)); },
        py::arg("x"), py::arg("dim") = py::none(), release);
  m.def("unsqueeze", &unsqueeze, release);
  m.def("permute", [](const Tensor& x, const std::vector<int64_t>& p) { return new_view(x, permute(x, p)); }, release);
  m.def("transpose", [](const Tensor& x, int64_t a, int64_t b) { return new_view(x, transpose(x, a, b)); }, release);
  m.def("broadcast_to", [](const Tensor& x, const Shape& s) { return new_view(x, broadcast_to(x, s)); }, release);
  m.def("expand", [](const Tensor& x, const Shape& s) { return new_view(x, expand(x, s)); }, release);
  m.def("cat", &cat, py::arg("tensors"), py::arg("dim") = 0, release);
  m.def("stack", &stack, py::arg("tensors"), py::arg("dim") = 0, release);
  m.def("split", [](const Tensor& x, const std::vector<int64_t>& sizes, int64_t d) {
    return new_views(x, split(x, sizes, d));
  }, release);
  m.def("split", [](const Tensor& x, int64_t size, int64_t d) { return new_views(x, split(x, size, d)); }, release);
  m.def("chunk", [](const Tensor& x, int64_t n, int64_t d) { return new_views(x, chunk(x, n, d)); }, release);
  m.def("_basic_getitem", &basic_getitem);
  m.def("_indexed_strides", [](const Tensor& x, const std::vector<int64_t>& codes) {
    return indexed_strides(x.shape(), x.strides(), codes);
  });
  m.def("slice", [](const Tensor& x, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    const std::vector<int64_t>& c) { return new_view(x, slice(x, a, b, c)); }, release);
  m.def("split_with_sizes", &split_with_sizes, py::arg("x"), py::arg("sizes"), py::arg("dim") = 0, release);
  m.def("slice_scatter", &slice_scatter, release);
  m.def("narrow", [](const Tensor& x, int64_t d, int64_t s, int64_t n) { return new_view(x, narrow(x, d, s, n)); },
        release);
  m.def("select", &select, release);
  m.def("diagonal", &diagonal, py::arg("x"), py::arg("offset") = 0, py::arg("dim1") = 0, py::arg("dim2") = 1, release);
  m.def("unfold", &unfold, release);
  m.def("as_strided", &as_strided, py::arg("x"), py::arg("size"), py::arg("stride"),
        py::arg("storage_offset") = py::none(), release);
  m.def("tril", &tril, py::arg("x"), py::arg("diagonal") = 0, release);
  m.def("triu", &triu, py::arg("x"), py::arg("diagonal") = 0, release);
  m.def("pad", &pad, py::arg("x"), py::arg("pad"), py::arg("value") = 0.0, release);

  // indexing
  m.def("index_select", &index_select, py::arg("x"), py::arg("dim"), py::arg("index"),
        py::arg("caller") = "index_select", release);
  m.def("index_add", &index_add, release);
  m.def("gather", &gather, release);
  m.def("gather_targets", &gather_targets, release);
  m.def("scatter_add", &scatter_add, release);
  m.def("scatter", &scatter, release);
  m.def("scatter_reduce", &scatter_reduce, py::arg("x"), py::arg("dim"), py::arg("index"), py::arg("src"),
        py::arg("reduce"), py::arg("include_self") = true, release);
  m.def("index_reduce", &index_reduce, py::arg("x"), py::arg("dim"), py::arg("index"), py::arg("source"),
        py::arg("reduce"), py::arg("include_self") = true, release);
  m.def("masked_fill", &masked_fill, release);
  m.def("one_hot", &one_hot, py::arg("x"), py::arg("num_classes") = -1, release);
  m.def("index", &index, release);
  m.def("index_put", &index_put, py::arg("x"), py::arg("indices"), py::arg("values"), py::arg("accumulate") = false,
        release);

  // sorting and scans
  m.def("sort", &sort, py::arg("x"), py::arg("dim") = -1, py::arg("descending") = false, release);
  m.def("argsort", &argsort, py::arg("x"), py::arg("dim") = -1, py::arg("descending") = false, release);
  m.def("topk", &topk, py::arg("x"), py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, release);
  m.def("nonzero", &nonzero, release);
  m.def("cumsum", &cumsum, py::arg("x"), py::arg("dim"), py::arg("dtype") = py::none(), release);
  m.def("cumprod", &cumprod, py::arg("x"), py::arg("dim"), py::arg("dtype") = py::none(), release);

  // decompositions and solvers (torch.linalg); lists of results become tuples in lucid.linalg
  m.def("linalg_lu_factor_ex", &linalg_lu_factor_ex, py::arg("A"), py::arg("pivot") = true,
        py::arg("check_errors") = false, py::arg("op") = "linalg.lu_factor_ex", release);
  m.def("linalg_lu", &linalg_lu, py::arg("A"), py::arg("pivot") = true, release);
  m.def("linalg_lu_solve", &linalg_lu_solve, py::arg("LU"), py::arg("pivots"), py::arg("B"), py::arg("left") = true,
        py::arg("adjoint") = false, release);
  m.def("linalg_inv_ex", &linalg_inv_ex, py::arg("A"), py::arg("check_errors") = false, release);
  m.def("linalg_inv", &linalg_inv, release);
  m.def("linalg_solve_ex", &linalg_solve_ex, py::arg("A"), py::arg("B"), py::arg("left") = true,
        py::arg("check_errors") = false, release);
  m.def("linalg_solve", &linalg_solve, py::arg("A"), py::arg("B"), py::arg("left") = true, release);
  m.def("linalg_slogdet", &linalg_slogdet, release);
  m.def("linalg_det", &linalg_det, release);
  m.def("logdet", &logdet, release);
  m.def("linalg_cholesky_ex", &linalg_cholesky_ex, py::arg("A"), py::arg("upper") = false,
        py::arg("check_errors") = false, release);
  m.def("linalg_solve_triangular", &linalg_solve_triangular, py::arg("A"), py::arg("B"), py::arg("upper"),
        py::arg("left") = true, py::arg("unitriangular") = false, release);
  m.def("linalg_qr", &linalg_qr, py::arg("A"), py::arg("mode") = "reduced", release);
  m.def("linalg_eigh", &linalg_eigh, py::arg("A"), py::arg("UPLO") = "L", release);
  m.def("linalg_eigvalsh", &linalg_eigvalsh, py::arg("A"), py::arg("UPLO") = "L", release);
  m.def("linalg_svd", &linalg_svd, py::arg("A"), py::arg("full_matrices") = true, release);
  m.def("linalg_svdvals", &linalg_svdvals, release);

  m.def("softmax", &softmax, release);
  m.def("log_softmax", &log_softmax, release);

  // in-place
  m.def("assign_", [](Tensor self, const Tensor& v) { return assign_(self, v); }, release);
  m.def("fill_", [](Tensor self, Scalar v) { return fill_(self, v); }, release);
  m.def("zero_", [](Tensor self) { return zero_(self); }, release);
  m.def("copy_", [](Tensor self, const Tensor& src) { return copy_(self, src); }, release);
  m.def("source_for_inplace", &source_for_inplace, release);
}

}  // namespace lucid::python
