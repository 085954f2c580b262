// CPU kernels of Reduce, ArgReduce and Softmax. A reduction is brought to
// the form [outer, R, inner], then each output element folds its R values;
// reduced dims that are not adjacent are reduced a block of adjacent ones at
// a time (a conv's bias gradient sums [N, C, H, W] over H and W, then N).
// Where AVX-512 is enabled, GCC still prefers 256-bit vectors; softmax's exp
// pass and the column sums run faster at 512 bits. The vectoriser never
// reorders float arithmetic, so results do not depend on the width.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/lanes.h"
#include "lucid/backend/cpu/layout.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

template <class A>
struct SumOp {
  static A init() { return A(0); }
  static A fold(A acc, A v) { return acc + v; }
};
template <class A>
struct ProdOp {
  static A init() { return A(1); }
  static A fold(A acc, A v) { return acc * v; }
};
template <class A>
struct MaxOp {
  static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  static A fold(A acc, A v) { return (v > acc || v != v) && acc == acc ? v : acc; }
};
template <class A>
struct MinOp {
  static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  static A fold(A acc, A v) { return (v < acc || v != v) && acc == acc ? v : acc; }
};
struct AllOp {
  static bool init() { return true; }
  static bool fold(bool acc, bool v) { return acc && v; }
};
struct AnyOp {
  static bool init() { return false; }
  static bool fold(bool acc, bool v) { return acc || v; }
};

// Accumulation type: float for 16-bit floats, the type itself otherwise
// (sums of integers are promoted to int64 by the op layer).
template <class T>
using acc_t = compute_t<T>;
// Sums and products of signed integers accumulate in the unsigned type of
// the same width: they wrap like PyTorch's instead of overflowing (undefined
// behaviour in C++); the bits stored back are the two's complement result.
template <class T>
struct modular_acc {
  using type = acc_t<T>;
};
template <>
struct modular_acc<int32_t> {
  using type = uint32_t;
};
template <>
struct modular_acc<int64_t> {
  using type = uint64_t;
};

// Sum of a contiguous run: lanes over blocks of at most 1024, the blocks
// added pairwise, so the rounding error grows with log(n) rather than n.
template <class T, class A>
A sum_run(const T* row, int64_t r) {
  if (r > 1024) {
    const int64_t h = (r / 2 + 15) / 16 * 16;
    return sum_run<T, A>(row, h) + sum_run<T, A>(row + h, r - h);
  }
  return lanes_sum<T, A>(row, r);
}

// Reduction across rows of length `inner` > 1 ([outer, R, inner]). A block
// of up to kCols adjacent columns is folded row after row in a local
// accumulator (vectorises along inner). Sums first add blocks of kRows rows
// into a fresh partial, bounding the error growth. The R rows are cut into
// chunks of kChunk rows, each folded by one task into a partial, and the
// partials are combined in chunk order. The cut depends only on the shape,
// so the bits do not depend on the thread count or on how the work is split.
constexpr int64_t kCols = 2048, kRows = 64, kChunk = 256;

// out[0, w) = fold of rows [k0, k1) of `base` (row stride `inner`).
template <class Op, class T, class A>
void fold_rows(const T* base, int64_t inner, int64_t k0, int64_t k1, int64_t w, A* out) {
  A acc[kCols], part[kCols];
  for (int64_t i = 0; i < w; ++i) acc[i] = Op::init();
  if constexpr (std::is_same_v<Op, SumOp<A>>) {
    for (int64_t b = k0; b < k1; b += kRows) {
      const int64_t e = std::min(k1, b + kRows);
      int64_t k = b;
      for (int64_t i = 0; i < w; ++i) part[i] = A(0);
      // four rows per pass over the partial: a third of the L1 traffic
      for (; k + 4 <= e; k += 4) {
        const T *r0 = base + k * inner, *r1 = r0 + inner, *r2 = r1 + inner, *r3 = r2 + inner;
        for (int64_t i = 0; i < w; ++i)
          part[i] += (A(load(r0, i)) + A(load(r1, i))) + (A(load(r2, i)) + A(load(r3, i)));
      }
      for (; k < e; ++k)
        for (int64_t i = 0; i < w; ++i) part[i] += A(load(base + k * inner, i));
      for (int64_t i = 0; i < w; ++i) acc[i] += part[i];
    }
  } else {
    for (int64_t k = k0; k < k1; ++k) {
      const T* row = base + k * inner;
      for (int64_t i = 0; i < w; ++i) acc[i] = Op::fold(acc[i], A(load(row, i)));
    }
  }
  for (int64_t i = 0; i < w; ++i) out[i] = acc[i];
}

template <class Op, class T, class A, class O>
void reduce_columns(const T* x, O* out, int64_t outer, int64_t r, int64_t inner) {
  const int64_t cblocks = (inner + kCols - 1) / kCols, chunks = std::max<int64_t>(1, (r + kChunk - 1) / kChunk);
  // With one chunk the fold is the result: written straight to `out` where
  // the types agree. Otherwise partials[(o * chunks + c) * inner + i] holds
  // chunk c's fold of column i.
  const bool direct = std::is_same_v<O, A> && chunks == 1;
  std::unique_ptr<A[]> partials(direct ? nullptr : new A[size_t(outer * chunks * inner)]);
  A* dst0 = direct ? reinterpret_cast<A*>(out) : partials.get();
  const int64_t task = std::max<int64_t>(1, std::min(r, kChunk) * std::min(inner, kCols));
  parallel_for(outer * cblocks * chunks, std::max<int64_t>(1, 2 * kElementwiseGrain / task), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t % chunks, i0 = t / chunks % cblocks * kCols, o = t / (chunks * cblocks);
      const int64_t cnt = std::min(kCols, inner - i0), k0 = c * kChunk, k1 = std::min(r, k0 + kChunk);
      const T* base = x + o * r * inner + i0;
      A* dst = dst0 + (o * chunks + c) * inner + i0;
      fold_rows<Op, T, A>(base, inner, k0, k1, cnt, dst);
    }
  });
  if (direct) return;
  parallel_for(outer * inner, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const A* p = partials.get() + q / inner * chunks * inner + q % inner;
      A acc = p[0];
      for (int64_t c = 1; c < chunks; ++c) acc = Op::fold(acc, p[c * inner]);
      store(out, q, acc);
    }
  });
}

// out[outer, inner] (elements of O) = the fold of x[outer, r, inner].
template <class Op, class T, class A, class O = T>
void reduce_ori(const T* x, O* out, int64_t outer, int64_t r, int64_t inner) {
  constexpr bool is_sum = std::is_same_v<Op, SumOp<A>>;
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * r;
        A acc;
        if constexpr (is_sum) {
          acc = sum_run<T, A>(row, r);
        } else {
          acc = Op::init();
          for (int64_t i = 0; i < r; ++i) acc = Op::fold(acc, A(load(row, i)));
        }
        store(out, o, acc);
      }
    });
    return;
  }
  reduce_columns<Op, T, A, O>(x, out, outer, r, inner);
}

// The input's dims with size-1 dims dropped and adjacent dims of one kind
// merged: alternating runs of kept and reduced elements.
struct Run {
  int64_t size;
  bool reduced;
};

std::vector<Run> reduce_runs(const Shape& s, const std::vector<int>& axes) {
  std::vector<bool> red(s.size(), false);
  for (int a : axes) red[size_t(a)] = true;
  std::vector<Run> runs;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) continue;
    if (!runs.empty() && runs.back().reduced == red[d]) runs.back().size *= s[d];
    else runs.push_back({s[d], bool(red[d])});
  }
  return runs;
}

// Folds the reduced runs of x (elements of T) into out (elements of T), the
// last reduced run first; each stage's result, in the accumulation type A,
// is the next one's input.
template <class Op, class T, class A>
void reduce_staged(const T* x, T* out, std::vector<Run> runs) {
  int64_t outer, r, inner;
  // The last reduced run as [outer, r, inner], dropped from `runs`; true
  // when it was the only one.
  auto next_stage = [&] {
    size_t k = runs.size() - 1;
    while (!runs[k].reduced) --k;
    outer = r = inner = 1;
    for (size_t i = 0; i < runs.size(); ++i) (i < k ? outer : i == k ? r : inner) *= runs[i].size;
    runs.erase(runs.begin() + long(k));
    return std::none_of(runs.begin(), runs.end(), [](const Run& run) { return run.reduced; });
  };
  if (next_stage()) {
    reduce_ori<Op, T, A>(x, out, outer, r, inner);
    return;
  }
  std::unique_ptr<A[]> from(new A[size_t(outer * inner)]);  // (A may be bool: no std::vector)
  reduce_ori<Op, T, A, A>(x, from.get(), outer, r, inner);
  while (!next_stage()) {
    std::unique_ptr<A[]> to(new A[size_t(outer * inner)]);
    reduce_ori<Op, A, A, A>(from.get(), to.get(), outer, r, inner);
    from = std::move(to);
  }
  reduce_ori<Op, A, A, T>(from.get(), out, outer, r, inner);
}

void reduce_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& rd = static_cast<const Reduce&>(p);
  const std::vector<Run> runs = reduce_runs(in[0].meta->shape, rd.axes);
  const DType dt = in[0].meta->dtype;
  const bool reduces = std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.reduced; });
  if (!reduces) {  // nothing of size > 1 reduced: a copy
    std::memcpy(out[0].data, in[0].data, size_t(in[0].meta->numel()) * itemsize(dt));
    return;
  }
  if (rd.op == ReduceOp::All || rd.op == ReduceOp::Any) {
    const bool* x = static_cast<const bool*>(in[0].data);
    bool* o = static_cast<bool*>(out[0].data);
    if (rd.op == ReduceOp::All) reduce_staged<AllOp, bool, bool>(x, o, runs);
    else reduce_staged<AnyOp, bool, bool>(x, o, runs);
    return;
  }
  LUCID_DISPATCH_NUMERIC(dt, rd.name().c_str(), [&] {
    using A = acc_t<T>;
    using M = typename modular_acc<T>::type;
    const T* x = static_cast<const T*>(in[0].data);
    T* o = static_cast<T*>(out[0].data);
    switch (rd.op) {
      case ReduceOp::Sum: reduce_staged<SumOp<M>, T, M>(x, o, runs); break;
      case ReduceOp::Prod: reduce_staged<ProdOp<M>, T, M>(x, o, runs); break;
      case ReduceOp::Max: reduce_staged<MaxOp<A>, T, A>(x, o, runs); break;
      case ReduceOp::Min: reduce_staged<MinOp<A>, T, A>(x, o, runs); break;
      default: break;
    }
  });
}
LUCID_REGISTER_KERNEL(Reduce, CPU, reduce_kernel);

// --------------------------------------------------------------- ArgReduce
void arg_reduce_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ar = static_cast<const ArgReduce&>(p);
  const Shape& s = in[0].meta->shape;
  int64_t outer = 1, r = 1, inner = 1;
  for (int d = 0; d < int(s.size()); ++d) (d < ar.axis ? outer : (d == ar.axis ? r : inner)) *= s[d];
  const bool is_max = ar.op == ArgReduceOp::ArgMax;
  int64_t* o = static_cast<int64_t*>(out[0].data);
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "argmax", [&] {
    const T* x = static_cast<const T*>(in[0].data);
    parallel_for(outer * inner, 256, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t oi = q / inner, ii = q % inner;
        const T* base = x + oi * r * inner + ii;
        auto best = load(base, 0);
        int64_t bi = 0;
        for (int64_t k = 1; k < r; ++k) {
          auto v = load(base, k * inner);
          if (best != best) break;  // NaN wins, first occurrence
          if (v != v || (is_max ? v > best : v < best)) {
            best = v;
            bi = k;
          }
        }
        o[q] = bi;
      }
    });
  });
}
LUCID_REGISTER_KERNEL(ArgReduce, CPU, arg_reduce_kernel);

// ----------------------------------------------------------------- Softmax
// Largest element of v[0, n), NaNs skipped (a NaN reaches the row through
// the sum instead). A float max reduction does not auto-vectorise (NaN and
// signed-zero rules), so it is written on GCC/Clang vector types.
template <class A>
A row_max(const A* v, int64_t n) {
  A r = -std::numeric_limits<A>::infinity();
  int64_t k = 0;
#if defined(__GNUC__)
  constexpr int kLanes = 32 / sizeof(A);
  typedef A V __attribute__((vector_size(32)));
  V m0 = V{} + r, m1 = m0;
  for (; k + 2 * kLanes <= n; k += 2 * kLanes) {
    V a, b;
    std::memcpy(&a, v + k, sizeof a);
    std::memcpy(&b, v + k + kLanes, sizeof b);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
  }
  m0 = m1 > m0 ? m1 : m0;
  for (int j = 0; j < kLanes; ++j) r = m0[j] > r ? m0[j] : r;
#endif
  for (; k < n; ++k) r = v[k] > r ? v[k] : r;
  return r;
}

// Softmax over contiguous rows (inner == 1), rows split across threads. Per
// row: a max pass, an exp pass, a sum and a scaling pass, each a simple loop
// that vectorises. float and double rows are read in place and the softmax
// exps go straight to the output row (scaled there); 16-bit rows are widened
// into a buffer first, and log-softmax keeps its exps in a buffer.
template <class T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t r, bool log) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr bool wide = std::is_same_v<T, A>;
  parallel_for(outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> row(wide ? 0 : size_t(r)), ex(wide && !log ? 0 : size_t(r));
    for (int64_t q = b; q < e; ++q) {
      const T* xs = x + q * r;
      T* ys = y + q * r;
      const A* rw;
      if constexpr (wide) {
        rw = xs;
      } else {
        for (int64_t k = 0; k < r; ++k) row[k] = A(load(xs, k));
        rw = row.data();
      }
      A* ev = wide && !log ? reinterpret_cast<A*>(ys) : ex.data();
      A mx = row_max(rw, r);
      if (std::isinf(mx) && mx < 0) mx = 0;  // all -inf row: keep exp() well-defined
      for (int64_t k = 0; k < r; ++k) ev[k] = exp_(rw[k] - mx);
      // A NaN anywhere makes the sum NaN, so the whole row is NaN (PyTorch too).
      const A total = sum_run<A, A>(ev, r);
      if (log) {
        const A lse = std::log(total);  // subtracted after mx: x - mx is exact near large maxima
        for (int64_t k = 0; k < r; ++k) store(ys, k, (rw[k] - mx) - lse);
      } else {
        const A inv = A(1) / total;
        for (int64_t k = 0; k < r; ++k) store(ys, k, ev[k] * inv);
      }
    }
  });
}

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Softmax along a dim with `inner` > 1 elements after it: a block of
// adjacent columns at a time, walking memory in order (a column at a time
// would touch one element per cache line).
template <class T>
void softmax_columns(const T* x, T* y, int64_t outer, int64_t r, int64_t inner, bool log) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr int64_t kCols = 256;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(r * kCols, 1)),
               [&](int64_t b, int64_t e) {
    A mx[kCols], sum[kCols];
    for (int64_t t = b; t < e; ++t) {
      const int64_t oi = t / blocks, i0 = (t % blocks) * kCols, cnt = std::min(kCols, inner - i0);
      const T* xs = x + oi * r * inner + i0;
      T* ys = y + oi * r * inner + i0;
      for (int64_t i = 0; i < cnt; ++i) mx[i] = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < r; ++k)
        for (int64_t i = 0; i < cnt; ++i) {
          const A v = A(load(xs + k * inner, i));
          mx[i] = v > mx[i] ? v : mx[i];
        }
      for (int64_t i = 0; i < cnt; ++i) {
        if (std::isinf(mx[i]) && mx[i] < 0) mx[i] = 0;
        sum[i] = 0;
      }
      for (int64_t k = 0; k < r; ++k)
        for (int64_t i = 0; i < cnt; ++i) {
          const A ev = exp_(A(load(xs + k * inner, i)) - mx[i]);
          sum[i] += ev;
          if (!log) store(ys + k * inner, i, ev);
        }
      if (log) {
        for (int64_t i = 0; i < cnt; ++i) sum[i] = std::log(sum[i]);
        for (int64_t k = 0; k < r; ++k)
          for (int64_t i = 0; i < cnt; ++i) store(ys + k * inner, i, (A(load(xs + k * inner, i)) - mx[i]) - sum[i]);
      } else {
        for (int64_t i = 0; i < cnt; ++i) sum[i] = A(1) / sum[i];
        for (int64_t k = 0; k < r; ++k)
          for (int64_t i = 0; i < cnt; ++i) {
            // Rescale what the pass above stored; 16-bit outputs were rounded
            // there, so they recompute exp instead of rounding twice.
            const A ev = is_half_v<T> ? exp_(A(load(xs + k * inner, i)) - mx[i]) : A(load(ys + k * inner, i));
            store(ys + k * inner, i, ev * sum[i]);
          }
      }
    }
  });
}

void softmax_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sm = static_cast<const Softmax&>(p);
  const Shape& s = in[0].meta->shape;
  int64_t outer = 1, r = 1, inner = 1;
  for (int d = 0; d < int(s.size()); ++d) (d < sm.axis ? outer : (d == sm.axis ? r : inner)) *= s[d];
  LUCID_DISPATCH_FLOAT(in[0].meta->dtype, "softmax", [&] {
    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    if (inner == 1) softmax_rows<T>(x, y, outer, r, sm.log);
    else softmax_columns<T>(x, y, outer, r, inner, sm.log);
  });
}
LUCID_REGISTER_KERNEL(Softmax, CPU, softmax_kernel);

}  // namespace

}  // namespace lucid::cpu
