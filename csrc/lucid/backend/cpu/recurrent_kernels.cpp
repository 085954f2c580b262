// CPU kernels of RecurrentCell and RecurrentCellBackward: one pass over a
// step's gates, split across the pool by batch rows. The activations are the
// elementwise kernels' own (math.h), so a fused cell computes what the
// unfused ops would.
#include <algorithm>
#include <cmath>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/recurrent.h"

namespace lucid::cpu {

namespace {

template <class C>
inline C sig(C x) {
  return unary_apply<UnaryOp::Sigmoid>(x);
}
template <class C>
inline C th(C x) {
  return unary_apply<UnaryOp::Tanh>(x);
}

// Rows of `h` hidden units each, in chunks of about kElementwiseGrain elements.
template <class F>
void for_rows(int64_t rows, int64_t h, int gates, F&& fn) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(h * gates, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

template <class T>
void rnn_forward(bool relu, const T* gi, const T* gh, const T* bias, T* out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows(rows, h, 1, [&](int64_t r) {
    const int64_t o = r * h;
    for (int64_t j = 0; j < h; ++j) {
      const C pre = (C(load(gh, o + j)) + C(load(bias, j))) + C(load(gi, o + j));
      store(out, o + j, relu ? unary_apply<UnaryOp::Relu>(pre) : th(pre));
    }
  });
}

template <class T>
void rnn_backward(bool relu, const T* y, const T* dy, T* d_pre, int64_t n) {
  using C = compute_t<T>;
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const C yv = load(y, k), g = load(dy, k);
      // relu: the gradient flows where the output is positive (PyTorch's threshold_backward).
      store(d_pre, k, relu ? (yv > C(0) ? g : C(0)) : g * (C(1) - yv * yv));
    }
  });
}

template <class T>
void lstm_forward(const T* gi, const T* gh, const T* bias, const T* c, T* h_out, T* c_out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows(rows, h, 4, [&](int64_t r) {
    const int64_t g0 = r * 4 * h, s0 = r * h;
    for (int64_t j = 0; j < h; ++j) {
      C pre[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t q = k * h + j;
        pre[k] = (C(load(gh, g0 + q)) + C(load(bias, q))) + C(load(gi, g0 + q));
      }
      const C i = sig(pre[0]), f = sig(pre[1]), g = th(pre[2]), o = sig(pre[3]);
      const C cn = f * C(load(c, s0 + j)) + i * g;
      store(c_out, s0 + j, cn);
      // tanh of the stored c' (rounded to T), as an op reading it would.
      store(h_out, s0 + j, o * th(C(load(c_out, s0 + j))));
    }
  });
}

template <class T>
void lstm_backward(const T* gi, const T* gh, const T* bias, const T* c, const T* c_new, const T* dh, const T* dc,
                   T* d_pre, T* dc_prev, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows(rows, h, 4, [&](int64_t r) {
    const int64_t g0 = r * 4 * h, s0 = r * h;
    for (int64_t j = 0; j < h; ++j) {
      C pre[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t q = k * h + j;
        pre[k] = (C(load(gh, g0 + q)) + C(load(bias, q))) + C(load(gi, g0 + q));
      }
      const C i = sig(pre[0]), f = sig(pre[1]), g = th(pre[2]), o = sig(pre[3]);
      const C tc = th(C(load(c_new, s0 + j)));
      const C dhv = load(dh, s0 + j);
      const C dct = C(load(dc, s0 + j)) + dhv * o * (C(1) - tc * tc);
      const C di = dct * g, df = dct * C(load(c, s0 + j)), dg = dct * i, dout = dhv * tc;
      store(d_pre, g0 + j, di * i * (C(1) - i));
      store(d_pre, g0 + h + j, df * f * (C(1) - f));
      store(d_pre, g0 + 2 * h + j, dg * (C(1) - g * g));
      store(d_pre, g0 + 3 * h + j, dout * o * (C(1) - o));
      store(dc_prev, s0 + j, dct * f);
    }
  });
}

template <class T>
void gru_forward(const T* gi, const T* gh, const T* bias, const T* hs, T* out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows(rows, h, 3, [&](int64_t r) {
    const int64_t g0 = r * 3 * h, s0 = r * h;
    for (int64_t j = 0; j < h; ++j) {
      const C rg = sig((C(load(gh, g0 + j)) + C(load(bias, j))) + C(load(gi, g0 + j)));
      const C zg = sig((C(load(gh, g0 + h + j)) + C(load(bias, h + j))) + C(load(gi, g0 + h + j)));
      const C hn = C(load(gh, g0 + 2 * h + j)) + C(load(bias, 2 * h + j));
      const C n = th(C(load(gi, g0 + 2 * h + j)) + hn * rg);
      store(out, s0 + j, (C(load(hs, s0 + j)) - n) * zg + n);
    }
  });
}

template <class T>
void gru_backward(const T* gi, const T* gh, const T* bias, const T* hs, const T* dh, T* dgi, T* dgh, T* dh_prev,
                  int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows(rows, h, 3, [&](int64_t r) {
    const int64_t g0 = r * 3 * h, s0 = r * h;
    for (int64_t j = 0; j < h; ++j) {
      const C rg = sig((C(load(gh, g0 + j)) + C(load(bias, j))) + C(load(gi, g0 + j)));
      const C zg = sig((C(load(gh, g0 + h + j)) + C(load(bias, h + j))) + C(load(gi, g0 + h + j)));
      const C hn = C(load(gh, g0 + 2 * h + j)) + C(load(bias, 2 * h + j));
      const C n = th(C(load(gi, g0 + 2 * h + j)) + hn * rg);
      const C hv = load(hs, s0 + j), g = load(dh, s0 + j);
      const C dn = g * (C(1) - zg), dz = g * (hv - n);
      const C dpn = dn * (C(1) - n * n);
      const C dpr = dpn * hn * rg * (C(1) - rg);
      const C dpz = dz * zg * (C(1) - zg);
      store(dgi, g0 + j, dpr);
      store(dgi, g0 + h + j, dpz);
      store(dgi, g0 + 2 * h + j, dpn);
      store(dgh, g0 + j, dpr);
      store(dgh, g0 + h + j, dpz);
      store(dgh, g0 + 2 * h + j, dpn * rg);
      store(dh_prev, s0 + j, g * zg);
    }
  });
}

template <class T>
const T* cin(const std::vector<ConstArg>& in, size_t k) {
  return static_cast<const T*>(in[k].data);
}
template <class T>
T* cout(const std::vector<MutArg>& out, size_t k) {
  return static_cast<T*>(out[k].data);
}

void recurrent_cell_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const CellKind cell = static_cast<const RecurrentCell&>(p).cell;
  const Shape& s = out[0].meta->shape;  // [B, H]
  const int64_t rows = s[0], h = s[1];
  if (rows * h == 0) return;
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, "recurrent_cell", [&] {
    switch (cell) {
      case CellKind::RnnTanh:
      case CellKind::RnnRelu:
        rnn_forward<T>(cell == CellKind::RnnRelu, cin<T>(in, 0), cin<T>(in, 1), cin<T>(in, 2), cout<T>(out, 0), rows,
                       h);
        break;
      case CellKind::Lstm:
        lstm_forward<T>(cin<T>(in, 0), cin<T>(in, 1), cin<T>(in, 2), cin<T>(in, 3), cout<T>(out, 0),
                        cout<T>(out, 1), rows, h);
        break;
      case CellKind::Gru:
        gru_forward<T>(cin<T>(in, 0), cin<T>(in, 1), cin<T>(in, 2), cin<T>(in, 3), cout<T>(out, 0), rows, h);
        break;
    }
  });
}
LUCID_REGISTER_KERNEL(RecurrentCell, CPU, recurrent_cell_kernel);

void recurrent_cell_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in,
                                    const std::vector<MutArg>& out) {
  const CellKind cell = static_cast<const RecurrentCellBackward&>(p).cell;
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, "recurrent_cell_backward", [&] {
    switch (cell) {
      case CellKind::RnnTanh:
      case CellKind::RnnRelu:
        rnn_backward<T>(cell == CellKind::RnnRelu, cin<T>(in, 0), cin<T>(in, 1), cout<T>(out, 0),
                        out[0].meta->numel());
        break;
      case CellKind::Lstm: {
        const Shape& s = out[1].meta->shape;
        if (s[0] * s[1] == 0) return;
        lstm_backward<T>(cin<T>(in, 0), cin<T>(in, 1), cin<T>(in, 2), cin<T>(in, 3), cin<T>(in, 4), cin<T>(in, 5),
                         cin<T>(in, 6), cout<T>(out, 0), cout<T>(out, 1), s[0], s[1]);
        break;
      }
      case CellKind::Gru: {
        const Shape& s = out[2].meta->shape;
        if (s[0] * s[1] == 0) return;
        gru_backward<T>(cin<T>(in, 0), cin<T>(in, 1), cin<T>(in, 2), cin<T>(in, 3), cin<T>(in, 4), cout<T>(out, 0),
                        cout<T>(out, 1), cout<T>(out, 2), s[0], s[1]);
        break;
      }
    }
  });
}
LUCID_REGISTER_KERNEL(RecurrentCellBackward, CPU, recurrent_cell_backward_kernel);

}  // namespace

}  // namespace lucid::cpu
