// CPU kernels of the sorting and scan primitives (ArgSort, TopK, NonZero,
// Scan). A tensor is viewed as [outer, n, inner] around the axis; each of
// the outer * inner lines of n elements is sorted or scanned on its own.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
Lines lines_around(const Shape& s, int axis) {
  Lines l;
  for (int d = 0; d < int(s.size()); ++d) (d < axis ? l.outer : (d == axis ? l.n : l.inner)) *= s[d];
  return l;
}

// a < b in PyTorch's sort order, where NaN is above +inf.
template <class C>
inline bool nan_last_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) return a < b || (b != b && a == a);
  else return a < b;
}

// A line's elements with their positions. Ordering by (value, position)
// makes every sort deterministic and equal to a stable sort.
template <class C>
struct Keyed {
  C v;
  int64_t i;
};
template <class C>
struct Ascending {
  bool operator()(const Keyed<C>& a, const Keyed<C>& b) const {
    if (nan_last_less(a.v, b.v)) return true;
    if (nan_last_less(b.v, a.v)) return false;
    return a.i < b.i;
  }
};
template <class C>
struct Descending {
  bool operator()(const Keyed<C>& a, const Keyed<C>& b) const {
    if (nan_last_less(b.v, a.v)) return true;
    if (nan_last_less(a.v, b.v)) return false;
    return a.i < b.i;
  }
};

// Runs fn(line buffer, output base) for every line, the line's elements
// loaded into `buf` (compute type) with their positions.
template <class T, class F>
void for_each_line(const T* x, const Lines& l, int64_t out_n, int64_t* out, F&& fn) {
  using C = compute_t<T>;
  const int64_t lines = l.outer * l.inner;
  parallel_for(lines, std::max<int64_t>(1, 16384 / std::max<int64_t>(l.n, 1)), [&](int64_t b, int64_t e) {
    std::vector<Keyed<C>> buf(size_t(l.n));
    for (int64_t q = b; q < e; ++q) {
      const int64_t oi = q / l.inner, ii = q % l.inner;
      const T* base = x + oi * l.n * l.inner + ii;
      for (int64_t k = 0; k < l.n; ++k) buf[size_t(k)] = {C(load(base, k * l.inner)), k};
      int64_t* o = out + oi * out_n * l.inner + ii;
      fn(buf, o);
    }
  });
}

void argsort_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& as = static_cast<const ArgSort&>(p);
  const Lines l = lines_around(in[0].meta->shape, as.axis);
  if (in[0].meta->numel() == 0) return;
  int64_t* o = static_cast<int64_t*>(out[0].data);
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "argsort", [&] {
    using C = compute_t<T>;
    for_each_line(static_cast<const T*>(in[0].data), l, l.n, o, [&](std::vector<Keyed<C>>& buf, int64_t* line) {
      if (as.descending) std::sort(buf.begin(), buf.end(), Descending<C>());
      else std::sort(buf.begin(), buf.end(), Ascending<C>());
      for (int64_t k = 0; k < l.n; ++k) line[k * l.inner] = buf[size_t(k)].i;
    });
  });
}
LUCID_REGISTER_KERNEL(ArgSort, CPU, argsort_kernel);

void topk_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& tk = static_cast<const TopK&>(p);
  const Lines l = lines_around(in[0].meta->shape, tk.axis);
  if (out[0].meta->numel() == 0) return;
  int64_t* o = static_cast<int64_t*>(out[0].data);
  const auto k = static_cast<std::ptrdiff_t>(tk.k);
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "topk", [&] {
    using C = compute_t<T>;
    for_each_line(static_cast<const T*>(in[0].data), l, tk.k, o, [&](std::vector<Keyed<C>>& buf, int64_t* line) {
      if (tk.largest) std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), Descending<C>());
      else std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), Ascending<C>());
      for (int64_t j = 0; j < tk.k; ++j) line[j * l.inner] = buf[size_t(j)].i;
    });
  });
}
LUCID_REGISTER_KERNEL(TopK, CPU, topk_kernel);

void nonzero_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int64_t count = static_cast<const NonZero&>(p).count;
  const Shape& s = in[0].meta->shape;
  const size_t nd = s.size();
  const int64_t n = in[0].meta->numel();
  int64_t* o = static_cast<int64_t*>(out[0].data);
  int64_t found = 0;
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "nonzero", [&] {
    const T* x = static_cast<const T*>(in[0].data);
    std::vector<int64_t> coord(nd, 0);
    for (int64_t i = 0; i < n; ++i) {
      if (load(x, i) != compute_t<T>(0)) {  // NaN counts as non-zero
        if (found == count) fail<Error>("nonzero(): the input changed while its non-zero elements were counted");
        std::copy(coord.begin(), coord.end(), o + found * int64_t(nd));
        ++found;
      }
      for (size_t d = nd; d-- > 0;) {
        if (++coord[d] < s[d]) break;
        coord[d] = 0;
      }
    }
  });
  if (found != count) fail<Error>("nonzero(): the input changed while its non-zero elements were counted");
}
LUCID_REGISTER_KERNEL(NonZero, CPU, nonzero_kernel);

// Accumulation type of a scan: PyTorch's CPU accumulate type (double for
// float32 and float64, float for the 16-bit floats); integers in their
// unsigned type, so overflow wraps instead of being undefined.
template <class T>
struct ScanAcc {
  using type = double;
};
template <>
struct ScanAcc<Half> {
  using type = float;
};
template <>
struct ScanAcc<BFloat16> {
  using type = float;
};
template <>
struct ScanAcc<int32_t> {
  using type = uint32_t;
};
template <>
struct ScanAcc<int64_t> {
  using type = uint64_t;
};

template <class T, bool kProd>
void scan_typed(const T* x, T* o, const Lines& l, bool reverse) {
  using A = typename ScanAcc<T>::type;
  // Lines along the axis run `inner` elements apart: a block of adjacent
  // lines is scanned together, so the inner loop walks contiguous memory.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (l.inner + kBlock - 1) / kBlock;
  parallel_for(l.outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(l.n * std::min(l.inner, kBlock), 1)),
               [&](int64_t b, int64_t e) {
                 A acc[kBlock];
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t oi = t / blocks, i0 = t % blocks * kBlock, w = std::min(kBlock, l.inner - i0);
                   const T* xb = x + oi * l.n * l.inner + i0;
                   T* ob = o + oi * l.n * l.inner + i0;
                   for (int64_t i = 0; i < w; ++i) acc[i] = A(kProd ? 1 : 0);
                   for (int64_t s = 0; s < l.n; ++s) {
                     const int64_t k = reverse ? l.n - 1 - s : s;
                     const T* xr = xb + k * l.inner;
                     T* orow = ob + k * l.inner;
                     for (int64_t i = 0; i < w; ++i) {
                       if constexpr (kProd) acc[i] *= A(load(xr, i));
                       else acc[i] += A(load(xr, i));
                       store(orow, i, acc[i]);
                     }
                   }
                 }
               });
}

void scan_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sc = static_cast<const Scan&>(p);
  const Lines l = lines_around(in[0].meta->shape, sc.axis);
  if (in[0].meta->numel() == 0) return;
  LUCID_DISPATCH_NUMERIC(in[0].meta->dtype, sc.name().c_str(), [&] {
    const T* x = static_cast<const T*>(in[0].data);
    T* o = static_cast<T*>(out[0].data);
    if (sc.op == ScanOp::Prod) scan_typed<T, true>(x, o, l, sc.reverse);
    else scan_typed<T, false>(x, o, l, sc.reverse);
  });
}
LUCID_REGISTER_KERNEL(Scan, CPU, scan_kernel);

}  // namespace

}  // namespace lucid::cpu
