// CPU kernels of the elementwise and creation primitives.
// Where AVX-512 is enabled, GCC still prefers 256-bit vectors; these loops
// (exp, erf, softmax rows) run ~1.4x faster at 512 bits. Lane-wise IEEE
// arithmetic gives the same bits at any width, so results do not change.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif
#include <algorithm>
#include <cstring>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/strided.h"
#include "lucid/core/philox.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

// float16 operands are widened, and results narrowed, a block at a time by
// the bulk conversions (vector instructions with F16C): a conversion per
// element keeps a loop from vectorising (exp or gelu ran 4-5x slower in
// float16 than in bfloat16). The bits are the same either way.
constexpr int64_t kHalfBlock = 256;

// fn(i0, m, xs..., ys) for each block [i0, i0 + m) of [b, e): xs the
// operands widened, ys the block's results, narrowed into out afterwards.
template <size_t N, class F>
void half_blocks(const Half* const (&in)[N], Half* out, int64_t b, int64_t e, F&& fn) {
  float xs[N][kHalfBlock], ys[kHalfBlock];
  for (int64_t i0 = b; i0 < e; i0 += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, e - i0);
    for (size_t k = 0; k < N; ++k) half_to_float(in[k] + i0, xs[k], m);
    fn(m, xs, ys);
    float_to_half(ys, out + i0, m);
  }
}

// ------------------------------------------------------------------ Unary
template <UnaryOp OP, class T>
void unary_loop(const T* x, void* out, int64_t n) {
  using C = compute_t<T>;
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, Half> && !unary_returns_bool(OP)) {
      const Half* in[1] = {x};
      half_blocks(in, static_cast<Half*>(out), b, e, [](int64_t m, const float (*xs)[kHalfBlock], float* ys) {
        for (int64_t i = 0; i < m; ++i) ys[i] = unary_apply<OP>(xs[0][i]);
      });
    } else if constexpr (unary_returns_bool(OP)) {
      bool* o = static_cast<bool*>(out);
      for (int64_t i = b; i < e; ++i) o[i] = unary_predicate<OP>(load(x, i));
    } else {
      T* o = static_cast<T*>(out);
      for (int64_t i = b; i < e; ++i) store(o, i, unary_apply<OP>(C(load(x, i))));
    }
  });
}

// Calls body(i, j) for output position i (row-major) and element j of a
// strided operand of the same shape, in parallel runs.
template <class F>
void strided_positions(const Shape& shape, const Shape& strides, F&& body) {
  const Shape dense = contiguous_strides(shape);
  const Shape* st[2] = {&dense, &strides};
  StridedLoop<2> loop(shape, st);
  const int64_t is = loop.inner_stride(1);
  parallel_for(numel(shape), kElementwiseGrain, [&](int64_t s, int64_t e) {
    loop.run(s, e, [&](int64_t pos, const int64_t* off, int64_t cnt) {
      for (int64_t i = 0; i < cnt; ++i) body(pos + i, off[1] + i * is);
    });
  });
}

template <UnaryOp OP, class T>
void unary_strided(const T* x, const Shape& shape, const Shape& strides, void* out) {
  using C = compute_t<T>;
  if constexpr (unary_returns_bool(OP)) {
    bool* o = static_cast<bool*>(out);
    strided_positions(shape, strides, [&](int64_t i, int64_t j) { o[i] = unary_predicate<OP>(load(x, j)); });
  } else {
    T* o = static_cast<T*>(out);
    strided_positions(shape, strides, [&](int64_t i, int64_t j) { store(o, i, unary_apply<OP>(C(load(x, j)))); });
  }
}

void unary_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const UnaryOp op = static_cast<const Unary&>(p).op;
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "unary", [&] {
    with_op<UnaryOp, int(UnaryOp::Count)>(op, [&](auto op_c) {
      constexpr UnaryOp OP = decltype(op_c)::value;
      if constexpr (unary_is_float_only(OP) && !is_float_v<T>) {
        fail<TypeError>(unary_op_name(OP), ": not implemented for ", dtype_name(in[0].meta->dtype));
      } else {
        if (in[0].strides)
          unary_strided<OP, T>(static_cast<const T*>(in[0].data), in[0].meta->shape, *in[0].strides, out[0].data);
        else
          unary_loop<OP, T>(static_cast<const T*>(in[0].data), out[0].data, n);
      }
    });
  });
}
LUCID_REGISTER_STRIDED_KERNEL(Unary, CPU, unary_kernel);

// ------------------------------------------------------------------ Binary
template <BinaryOp OP, class T>
void binary_loop(const ConstArg& a, const ConstArg& b, const MutArg& out) {
  using C = compute_t<T>;
  using O = std::conditional_t<binary_returns_bool(OP), bool, T>;
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  O* po = static_cast<O*>(out.data);
  const Shape& os = out.meta->shape;
  auto f = [](C x, C y) {
    if constexpr (binary_returns_bool(OP)) return binary_predicate<OP>(x, y);
    else return binary_apply<OP>(x, y);
  };
  const int64_t n = out.meta->numel();
  if (a.meta->shape == os && b.meta->shape == os && !a.strides && !b.strides) {  // one flat loop
    parallel_for(n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      if constexpr (std::is_same_v<O, Half>) {
        const Half* in[2] = {pa, pb};
        half_blocks(in, po, s, e, [&](int64_t m, const float (*xs)[kHalfBlock], float* ys) {
          for (int64_t i = 0; i < m; ++i) ys[i] = f(xs[0][i], xs[1][i]);
        });
      } else {
        for (int64_t i = s; i < e; ++i) store(po, i, f(load(pa, i), load(pb, i)));
      }
    });
    return;
  }
  const Shape sa = broadcast_strides(a.meta->shape, os, a.strides),
              sb = broadcast_strides(b.meta->shape, os, b.strides);
  const Shape* strides[2] = {&sa, &sb};
  StridedLoop<2> loop(os, strides);
  const int64_t ia = loop.inner_stride(0), ib = loop.inner_stride(1);
  parallel_for(n, kElementwiseGrain, [&](int64_t s, int64_t e) {
    loop.run(s, e, [&](int64_t pos, const int64_t* off, int64_t cnt) {
      const T* xa = pa + off[0];
      const T* xb = pb + off[1];
      O* o = po + pos;
      if constexpr (std::is_same_v<O, Half>) {
        if (ia <= 1 && ib <= 1) {  // runs of elements, or one element broadcast: in blocks
          float x[kHalfBlock], y[kHalfBlock], r[kHalfBlock];
          for (int64_t i0 = 0; i0 < cnt; i0 += kHalfBlock) {
            const int64_t m = std::min(kHalfBlock, cnt - i0);
            if (ia) half_to_float(xa + i0, x, m);
            else std::fill(x, x + m, load(xa, 0));
            if (ib) half_to_float(xb + i0, y, m);
            else std::fill(y, y + m, load(xb, 0));
            for (int64_t i = 0; i < m; ++i) r[i] = f(x[i], y[i]);
            float_to_half(r, o + i0, m);
          }
          return;
        }
      }
      if (ia == 1 && ib == 0) {
        const C y = load(xb, 0);
        for (int64_t i = 0; i < cnt; ++i) store(o, i, f(load(xa, i), y));
      } else if (ia == 0 && ib == 1) {
        const C x = load(xa, 0);
        for (int64_t i = 0; i < cnt; ++i) store(o, i, f(x, load(xb, i)));
      } else if (ia == 1 && ib == 1) {
        for (int64_t i = 0; i < cnt; ++i) store(o, i, f(load(xa, i), load(xb, i)));
      } else {
        for (int64_t i = 0; i < cnt; ++i) store(o, i, f(load(xa, i * ia), load(xb, i * ib)));
      }
    });
  });
}

void binary_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const BinaryOp op = static_cast<const Binary&>(p).op;
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "binary", [&] {
    with_op<BinaryOp, int(BinaryOp::Count)>(op, [&](auto op_c) {
      constexpr BinaryOp OP = decltype(op_c)::value;
      binary_loop<OP, T>(in[0], in[1], out[0]);
    });
  });
}
LUCID_REGISTER_STRIDED_KERNEL(Binary, CPU, binary_kernel);

// ------------------------------------------------------------------- Where
template <class T>
void where_loop(const ConstArg& c, const ConstArg& a, const ConstArg& b, const MutArg& out) {
  const Shape& os = out.meta->shape;
  const Shape sc = broadcast_strides(c.meta->shape, os, c.strides), sa = broadcast_strides(a.meta->shape, os, a.strides),
              sb = broadcast_strides(b.meta->shape, os, b.strides);
  const Shape* strides[3] = {&sc, &sa, &sb};
  StridedLoop<3> loop(os, strides);
  const int64_t ic = loop.inner_stride(0), ia = loop.inner_stride(1), ib = loop.inner_stride(2);
  const bool* pc = static_cast<const bool*>(c.data);
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  T* po = static_cast<T*>(out.data);
  parallel_for(out.meta->numel(), kElementwiseGrain, [&](int64_t s, int64_t e) {
    loop.run(s, e, [&](int64_t pos, const int64_t* off, int64_t cnt) {
      if (ic == 1 && ia == 1 && ib == 1) {
        // Unit strides: a branch-free select the compiler vectorises (a
        // data-dependent branch mispredicts on masks like relu's).
        const bool* __restrict cc = pc + off[0];
        const T* __restrict aa = pa + off[1];
        const T* __restrict bb = pb + off[2];
        T* __restrict oo = po + pos;
        for (int64_t i = 0; i < cnt; ++i) {
          const T mask = T(0) - T(cc[i]);  // all ones where the condition holds
          oo[i] = T(bb[i] ^ ((aa[i] ^ bb[i]) & mask));
        }
        return;
      }
      for (int64_t i = 0; i < cnt; ++i)
        po[pos + i] = pc[off[0] + i * ic] ? pa[off[1] + i * ia] : pb[off[2] + i * ib];
    });
  });
}

void where_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  switch (itemsize(in[1].meta->dtype)) {  // a select moves bytes: dispatch on width
    case 1: where_loop<uint8_t>(in[0], in[1], in[2], out[0]); break;
    case 2: where_loop<uint16_t>(in[0], in[1], in[2], out[0]); break;
    case 4: where_loop<uint32_t>(in[0], in[1], in[2], out[0]); break;
    case 8: where_loop<uint64_t>(in[0], in[1], in[2], out[0]); break;
  }
}
LUCID_REGISTER_STRIDED_KERNEL(Where, CPU, where_kernel);

// ------------------------------------------------------------- Cast, Copy
template <class From, class To>
inline void cast_one(const From* s, int64_t j, To* d, int64_t i) {
  auto v = load(s, j);
  if constexpr (std::is_same_v<To, bool>) {
    d[i] = v != decltype(v)(0);
  } else if constexpr (is_float_v<From> && !is_float_v<To> && sizeof(To) <= 2) {
    d[i] = element::narrow_float<To>(v);
  } else if constexpr (is_float_v<From> && !is_float_v<To>) {
    store(d, i, v != v ? To(0) : To(v));  // NaN to integer: 0, not UB
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    store(d, i, float(v));
  } else {
    store(d, i, v);
  }
}

template <class From, class To>
void cast_loop(const ConstArg& in, void* dst, int64_t n) {
  const From* s = static_cast<const From*>(in.data);
  To* d = static_cast<To*>(dst);
  if (in.strides) {
    strided_positions(in.meta->shape, *in.strides, [&](int64_t i, int64_t j) { cast_one(s, j, d, i); });
    return;
  }
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<From, Half> && std::is_same_v<To, float>) {
      half_to_float(s + b, d + b, e - b);
    } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, Half>) {
      float_to_half(s + b, d + b, e - b);
    } else {
      for (int64_t i = b; i < e; ++i) cast_one(s, i, d, i);
    }
  });
}

void cast_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int64_t n = out[0].meta->numel();
  const DType to = out[0].meta->dtype;
  LUCID_DISPATCH_ALL(in[0].meta->dtype, "cast", [&] {
    using From = T;
    LUCID_DISPATCH_ALL(to, "cast", [&] { cast_loop<From, T>(in[0], out[0].data, n); });
  });
}
LUCID_REGISTER_STRIDED_KERNEL(Cast, CPU, cast_kernel);

void copy_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const size_t nbytes = size_t(out[0].meta->numel()) * itemsize(out[0].meta->dtype);
  const char* s = static_cast<const char*>(in[0].data);
  char* d = static_cast<char*>(out[0].data);
  parallel_for(int64_t(nbytes), kElementwiseGrain * 8,
               [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
}
LUCID_REGISTER_KERNEL(Copy, CPU, copy_kernel);

// --------------------------------------------------------- Full, Arange
template <class T>
T fill_value(const Full& f) {
  T fill;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) fill = T(f.int_value);
  else store(&fill, 0, compute_t<T>(f.value));
  return fill;
}

void full_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const auto& f = static_cast<const Full&>(p);
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "full", [&] {
    T* o = static_cast<T*>(out[0].data);
    const T fill = fill_value<T>(f);
    parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { std::fill(o + b, o + e, fill); });
  });
}
LUCID_REGISTER_KERNEL(Full, CPU, full_kernel);

template <class T>
void store_arange_value(T* o, int64_t i, double v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) o[i] = T(uint64_t(int64_t(v)));  // wraps, as PyTorch's
  else store(o, i, v);
}

void arange_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const auto& a = static_cast<const Arange&>(p);
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "arange", [&] {
    T* o = static_cast<T*>(out[0].data);
    for (int64_t i = 0; i < n; ++i) store_arange_value(o, i, a.start + double(i) * a.step);
  });
}
LUCID_REGISTER_KERNEL(Arange, CPU, arange_kernel);

// ------------------------------------------------------------------ Random
void random_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& r = static_cast<const Random&>(p);
  const int64_t* key = static_cast<const int64_t*>(in[0].data);
  const uint64_t seed = uint64_t(key[0]), offset = uint64_t(key[1]);
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, "random", [&] {
    T* o = static_cast<T*>(out[0].data);
    parallel_for(n, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float v = r.dist == Distribution::Uniform ? philox::uniform_at(seed, offset, uint64_t(i))
                                                        : philox::normal_at(seed, offset, uint64_t(i));
        store(o, i, v);
      }
    });
  });
}
LUCID_REGISTER_KERNEL(Random, CPU, random_kernel);

}  // namespace

}  // namespace lucid::cpu
