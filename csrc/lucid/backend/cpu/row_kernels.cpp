// CPU kernels that work row by row: LayerNorm, LayerNormBackward and
// SoftmaxBackward. Rows are independent, so they are split across the pool;
// each row is read into float (or double) once and reduced with fixed-width
// partial sums, so results do not depend on the thread count.
#include <cmath>
#include <vector>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/lanes.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/norm.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

void rows_of(const TensorMeta& m, int ndims, int64_t& rows, int64_t& d) {
  d = 1;
  for (size_t i = m.shape.size() - size_t(ndims); i < m.shape.size(); ++i) d *= m.shape[i];
  rows = d == 0 ? 0 : m.numel() / d;
}

template <class T>
void layer_norm_rows(const T* x, T* xhat, T* mean, T* rstd, int64_t rows, int64_t d, double eps) {
  using A = compute_t<T>;
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(d, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> buf(size_t(d) * 2);
    A* __restrict v = buf.data();
    A* __restrict sq = v + d;
    for (int64_t r = b; r < e; ++r) {
      const T* xs = x + r * d;
      for (int64_t k = 0; k < d; ++k) v[k] = load(xs, k);
      const A mu = lanes_sum<A, A>(v, d) / A(d);
      for (int64_t k = 0; k < d; ++k) {
        v[k] -= mu;
        sq[k] = v[k] * v[k];
      }
      const A rs = A(1) / std::sqrt(lanes_sum<A, A>(sq, d) / A(d) + A(eps));
      T* ys = xhat + r * d;
      for (int64_t k = 0; k < d; ++k) store(ys, k, v[k] * rs);
      store(mean, r, mu);
      store(rstd, r, rs);
    }
  });
}

// LayerNormBackward's formula (ops/norm.h), a row at a time.
template <class T>
void layer_norm_backward_rows(const T* g, const T* x, const T* mean, const T* rstd, T* dx, int64_t rows,
                              int64_t d) {
  using A = compute_t<T>;
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(d, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> buf(size_t(d) * 3);
    A* __restrict gv = buf.data();
    A* __restrict xv = gv + d;
    A* __restrict gx = xv + d;
    for (int64_t r = b; r < e; ++r) {
      const T* gs = g + r * d;
      const T* xs = x + r * d;
      for (int64_t k = 0; k < d; ++k) {
        gv[k] = load(gs, k);
        xv[k] = load(xs, k);
        gx[k] = gv[k] * xv[k];
      }
      const A sum_g = lanes_sum<A, A>(gv, d), sum_gx = lanes_sum<A, A>(gx, d);
      const A mu = load(mean, r), rs = load(rstd, r), scale = A(1) / A(d);
      const A coef_x = (sum_g * mu - sum_gx) * rs * rs * rs * scale;
      const A shift = -coef_x * mu - sum_g * rs * scale;
      T* out = dx + r * d;
      for (int64_t k = 0; k < d; ++k) store(out, k, rs * gv[k] + coef_x * xv[k] + shift);
    }
  });
}

void layer_norm_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ln = static_cast<const LayerNorm&>(p);
  int64_t rows, d;
  rows_of(*in[0].meta, ln.ndims, rows, d);
  LUCID_DISPATCH_FLOAT(in[0].meta->dtype, "layer_norm", [&] {
    layer_norm_rows(static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data), static_cast<T*>(out[1].data),
                    static_cast<T*>(out[2].data), rows, d, ln.eps);
  });
}
LUCID_REGISTER_KERNEL(LayerNorm, CPU, layer_norm_kernel);

void layer_norm_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ln = static_cast<const LayerNormBackward&>(p);
  int64_t rows, d;
  rows_of(*in[1].meta, ln.ndims, rows, d);
  LUCID_DISPATCH_FLOAT(in[1].meta->dtype, "layer_norm_backward", [&] {
    layer_norm_backward_rows(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                             static_cast<const T*>(in[2].data), static_cast<const T*>(in[3].data),
                             static_cast<T*>(out[0].data), rows, d);
  });
}
LUCID_REGISTER_KERNEL(LayerNormBackward, CPU, layer_norm_backward_kernel);

// Softmax's input gradient over [outer, r, inner] (the reduced axis r):
// y * (g - sum(g * y)), or g - exp(y) * sum(g) for log_softmax.
template <class T>
void softmax_backward(const T* g, const T* y, T* dx, int64_t outer, int64_t r, int64_t inner, bool log) {
  using A = compute_t<T>;
  parallel_for(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> buf(size_t(r) * 3);
    A* __restrict gv = buf.data();
    A* __restrict yv = gv + r;
    A* __restrict t = yv + r;
    for (int64_t q = b; q < e; ++q) {
      const int64_t base = (q / inner) * r * inner + q % inner;
      for (int64_t k = 0; k < r; ++k) {
        gv[k] = load(g, base + k * inner);
        yv[k] = load(y, base + k * inner);
      }
      if (log) {
        const A s = lanes_sum<A, A>(gv, r);
        for (int64_t k = 0; k < r; ++k) store(dx, base + k * inner, gv[k] - exp_(yv[k]) * s);
      } else {
        for (int64_t k = 0; k < r; ++k) t[k] = gv[k] * yv[k];
        const A s = lanes_sum<A, A>(t, r);
        for (int64_t k = 0; k < r; ++k) store(dx, base + k * inner, yv[k] * (gv[k] - s));
      }
    }
  });
}

void softmax_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sb = static_cast<const SoftmaxBackward&>(p);
  const Shape& s = in[1].meta->shape;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < sb.axis; ++d) outer *= s[d];
  for (size_t d = size_t(sb.axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t r = s.empty() ? 1 : s[sb.axis];
  LUCID_DISPATCH_FLOAT(in[1].meta->dtype, "softmax_backward", [&] {
    softmax_backward(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                     static_cast<T*>(out[0].data), outer, r, inner, sb.log);
  });
}
LUCID_REGISTER_KERNEL(SoftmaxBackward, CPU, softmax_backward_kernel);

}  // namespace

}  // namespace lucid::cpu
