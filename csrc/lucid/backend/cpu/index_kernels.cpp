// CPU kernels of the indexing primitives. Indices are bounds-checked here:
// an out-of-range index raises IndexError instead of reading stray memory.
#include <cstring>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

int64_t read_index(const ConstArg& idx, int64_t i) {
  return idx.meta->dtype == DType::Int32 ? static_cast<const int32_t*>(idx.data)[i]
                                         : static_cast<const int64_t*>(idx.data)[i];
}

// PyTorch's indexing primitives take indices in [0, size): a negative index
// is an error, not a position from the end (Python-style wrapping happens
// before them, in ops::index). `caller` names the user's op in the error.
[[noreturn]] void index_out_of_bounds(int64_t v, int64_t size, const char* caller, int axis) {
  fail<IndexError>(caller, "(): index ", v, " is out of bounds for dimension ", axis, " with size ", size);
}
inline int64_t checked(int64_t v, int64_t size, const char* caller, int axis) {
  if (v < 0 || v >= size) index_out_of_bounds(v, size, caller, axis);
  return v;
}

// A loss reading the log-probabilities of its class targets (Gather::loss):
// the error is about the user's targets, as PyTorch reports it.
[[noreturn]] void target_out_of_bounds(int64_t v, int64_t classes, const std::string& loss, int axis) {
  fail<IndexError>(loss, "(): Target ", v, " is out of bounds: the input has ", classes, " classes along dimension ",
                   axis, ", so a target must be in [0, ", classes - 1, "] (or equal ignore_index)");
}

template <class T>
inline void add_into(T* dst, int64_t i, const T* src, int64_t j) {
  if constexpr (std::is_same_v<T, bool>) dst[i] = dst[i] || src[j];
  else store(dst, i, load(dst, i) + load(src, j));
}

// Visits positions [begin, end) of `shape` as (linear position, multi-index).
template <class F>
void for_each_index_in(const Shape& shape, int64_t begin, int64_t end, F&& fn) {
  if (begin >= end) return;  // an empty shape has no position to start from
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t rem = begin;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  for (int64_t pos = begin; pos < end; ++pos) {
    fn(pos, idx);
    for (int d = int(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

template <class F>
void for_each_index(const Shape& shape, F&& fn) {
  for_each_index_in(shape, 0, numel(shape), std::forward<F>(fn));
}

// Gather moves elements: dispatched on their width and the index type, split
// across threads by rows of the index (the offset of a row is computed once).
template <class W, class I>
void gather_typed(const Gather& g, const ConstArg& x_arg, const ConstArg& index, W* o) {
  const int axis = g.axis;
  const Shape& xs = x_arg.meta->shape;
  const Shape xst = contiguous_strides(xs);
  const Shape& is = index.meta->shape;
  const W* x = static_cast<const W*>(x_arg.data);
  const I* ix = static_cast<const I*>(index.data);
  const int last = int(is.size()) - 1;
  const int64_t cols = is[last], rows = numel(is) / std::max<int64_t>(cols, 1);
  const Shape lead(is.begin(), is.end() - 1);
  const int64_t size = xs[axis], step = xst[axis];
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
    for_each_index_in(lead, b, e, [&](int64_t row, const std::vector<int64_t>& idx) {
      int64_t base = 0;
      for (int d = 0; d < last; ++d)
        if (d != axis) base += idx[d] * xst[d];
      const I* ir = ix + row * cols;
      W* orow = o + row * cols;
      for (int64_t i = 0; i < cols; ++i) {
        const int64_t v = int64_t(ir[i]);
        if (v < 0 || v >= size) {
          if (!g.loss.empty()) target_out_of_bounds(v, size, g.loss, axis);
          index_out_of_bounds(v, size, "gather", axis);
        }
        orow[i] = x[base + (axis == last ? 0 : i) + v * step];
      }
    });
  });
}

template <class W>
void gather_width(const Gather& g, const ConstArg& x, const ConstArg& index, void* o) {
  if (index.meta->dtype == DType::Int32) gather_typed<W, int32_t>(g, x, index, static_cast<W*>(o));
  else gather_typed<W, int64_t>(g, x, index, static_cast<W*>(o));
}

void gather_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& g = static_cast<const Gather&>(p);
  if (in[1].meta->numel() == 0) return;
  switch (itemsize(in[0].meta->dtype)) {
    case 1: gather_width<uint8_t>(g, in[0], in[1], out[0].data); break;
    case 2: gather_width<uint16_t>(g, in[0], in[1], out[0].data); break;
    case 4: gather_width<uint32_t>(g, in[0], in[1], out[0].data); break;
    case 8: gather_width<uint64_t>(g, in[0], in[1], out[0].data); break;
  }
}
LUCID_REGISTER_KERNEL(Gather, CPU, gather_kernel);

void scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sc = static_cast<const ScatterAdd&>(p);
  const Shape& bs = out[0].meta->shape;
  const Shape bst = contiguous_strides(bs);
  const Shape sst = contiguous_strides(in[2].meta->shape);
  const size_t es = itemsize(out[0].meta->dtype);
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, size_t(out[0].meta->numel()) * es);
  const std::string op_name = sc.name();  // once, not per element
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "scatter", [&] {
    T* o = static_cast<T*>(out[0].data);
    const T* src = static_cast<const T*>(in[2].data);
    for_each_index(in[1].meta->shape, [&](int64_t pos, const std::vector<int64_t>& idx) {
      int64_t off = 0, soff = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        off += (int(d) == sc.axis ? checked(read_index(in[1], pos), bs[d], op_name.c_str(), sc.axis) : idx[d]) *
               bst[d];
        soff += idx[d] * sst[d];
      }
      if (sc.accumulate) {
        add_into(o, off, src, soff);
      } else {
        o[off] = src[soff];
      }
    });
  });
}
LUCID_REGISTER_KERNEL(ScatterAdd, CPU, scatter_kernel);

// One step of a scatter reduction: acc combined with v. NaN propagates
// through amax/amin as in PyTorch; integer products wrap.
template <class T>
compute_t<T> reduce_step(ScatterReduceOp op, compute_t<T> acc, compute_t<T> v) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case ScatterReduceOp::Sum: case ScatterReduceOp::Amax: return acc || v;
      default: return acc && v;  // Prod, Amin (Mean is rejected for bool)
    }
  } else {
    switch (op) {
      case ScatterReduceOp::Sum: case ScatterReduceOp::Mean: return acc + v;
      case ScatterReduceOp::Prod:
        if constexpr (std::is_integral_v<C>)
          return C(std::make_unsigned_t<C>(acc) * std::make_unsigned_t<C>(v));
        else
          return acc * v;
      case ScatterReduceOp::Amax:
        if constexpr (!std::is_integral_v<C>)
          if (v != v) return v;
        return acc < v ? v : acc;
      case ScatterReduceOp::Amin:
        if constexpr (!std::is_integral_v<C>)
          if (v != v) return v;
        return v < acc ? v : acc;
    }
    return acc;
  }
}

// The mean's division: each written position by the number of values
// reduced into it (floor division for integers, as PyTorch).
template <class T>
void divide_by_count(T* o, const std::vector<int64_t>& count, bool include_self) {
  if constexpr (!std::is_same_v<T, bool>) {
    using C = compute_t<T>;
    for (size_t i = 0; i < count.size(); ++i) {
      const int64_t n = count[i] + (include_self ? 1 : 0);
      if (count[i] == 0 || n == 1) continue;
      const C v = load(o, int64_t(i));
      if constexpr (std::is_integral_v<C>) {
        C q = v / C(n);
        if (v % C(n) != 0 && v < 0) --q;
        store(o, int64_t(i), q);
      } else {
        store(o, int64_t(i), C(v / C(n)));
      }
    }
  }
}

void scatter_reduce_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sr = static_cast<const ScatterReduce&>(p);
  const Shape& bs = out[0].meta->shape;
  const Shape bst = contiguous_strides(bs);
  const Shape sst = contiguous_strides(in[2].meta->shape);
  const int64_t total = out[0].meta->numel();
  if (out[0].data != in[0].data)
    std::memcpy(out[0].data, in[0].data, size_t(total) * itemsize(out[0].meta->dtype));
  // Values reduced into each position (self counts as one when included):
  // marks the first write without include_self, and divides for the mean.
  std::vector<int64_t> count(size_t(total), 0);
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "scatter_reduce", [&] {
    T* o = static_cast<T*>(out[0].data);
    const T* src = static_cast<const T*>(in[2].data);
    for_each_index(in[1].meta->shape, [&](int64_t pos, const std::vector<int64_t>& idx) {
      int64_t off = 0, soff = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        off += (int(d) == sr.axis ? checked(read_index(in[1], pos), bs[d], "scatter_reduce", sr.axis) : idx[d]) *
               bst[d];
        soff += idx[d] * sst[d];
      }
      const bool first = !sr.include_self && count[size_t(off)] == 0;
      store(o, off, first ? load(src, soff) : reduce_step<T>(sr.op, load(o, off), load(src, soff)));
      ++count[size_t(off)];
    });
    if (sr.op == ScatterReduceOp::Mean) divide_by_count(o, count, sr.include_self);
  });
}
LUCID_REGISTER_KERNEL(ScatterReduce, CPU, scatter_reduce_kernel);

void axis_split(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int d = 0; d < int(s.size()); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
}

void index_select_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sel = static_cast<const IndexSelect&>(p);
  const int axis = sel.axis;
  const Shape& xs = in[0].meta->shape;
  int64_t outer, inner;
  axis_split(xs, axis, outer, inner);
  const int64_t n = in[1].meta->numel(), size = xs[axis];
  const size_t row = size_t(inner) * itemsize(in[0].meta->dtype);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) idx[j] = checked(read_index(in[1], j), size, sel.caller.c_str(), axis);
  const char* x = static_cast<const char*>(in[0].data);
  char* o = static_cast<char*>(out[0].data);
  parallel_for(outer * n, std::max<int64_t>(1, int64_t(65536 / std::max<size_t>(row, 1))), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t oi = q / n, j = q % n;
      std::memcpy(o + size_t(q) * row, x + (size_t(oi) * size_t(size) + size_t(idx[j])) * row, row);
    }
  });
}
LUCID_REGISTER_KERNEL(IndexSelect, CPU, index_select_kernel);

void index_add_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const IndexAdd&>(p).axis;
  const Shape& bs = out[0].meta->shape;
  int64_t outer, inner;
  axis_split(bs, axis, outer, inner);
  const int64_t n = in[1].meta->numel(), size = bs[axis];
  const size_t es = itemsize(out[0].meta->dtype);
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, size_t(out[0].meta->numel()) * es);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) idx[j] = checked(read_index(in[1], j), size, "index_add", axis);
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "index_add", [&] {
    T* o = static_cast<T*>(out[0].data);
    const T* src = static_cast<const T*>(in[2].data);
    // Rows of one destination never race: split over the inner extent.
    parallel_for(inner, 4096, [&](int64_t b, int64_t e) {
      for (int64_t oi = 0; oi < outer; ++oi)
        for (int64_t j = 0; j < n; ++j) {
          T* dst = o + (oi * size + idx[j]) * inner;
          const T* s = src + (oi * n + j) * inner;
          for (int64_t i = b; i < e; ++i) add_into(dst, i, s, i);
        }
    });
  });
}
LUCID_REGISTER_KERNEL(IndexAdd, CPU, index_add_kernel);

}  // namespace

}  // namespace lucid::cpu
