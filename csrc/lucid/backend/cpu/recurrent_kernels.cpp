// CPU kernels of RecurrentCell and RecurrentCellBackward: one pass over a
// step's gates, split across the pool by batch rows. The activations are the
// elementwise kernels' own (math.h), so a fused cell computes what the
// unfused ops would.
// GCC (12) leaves the branch-free activations of math.h scalar unless it may
// assume floating-point operations do not trap (it will not if-convert
// their selects otherwise). Lucid never enables FP traps, and the
// vectorised code computes each lane exactly as the scalar code does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <algorithm>
#include <cmath>
#include <vector>

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

// Rows of `h` hidden units each, in chunks of about kElementwiseGrain
// elements; fn(row, scratch) gets `scratch_per_row` values of scratch in
// the compute type, reused across the chunk's rows.
template <class C, class F>
void for_rows(int64_t rows, int64_t h, int gates, int64_t scratch_per_row, F&& fn) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(h * gates, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    std::vector<C> scratch(size_t(std::max<int64_t>(scratch_per_row, 1)));
    for (int64_t r = b; r < e; ++r) fn(r, scratch.data());
  });
}

// dst[j] = act((gh[j] + bias[j]) + gi[j]) over one gate's h units: the
// pre-activation in PyTorch's order (hidden projection plus its bias, then
// the input projection). Separate simple loops, so each vectorises.
template <class T, class C, class Act>
inline void gate(const T* gi, const T* gh, const T* bias, C* __restrict dst, int64_t h, Act act) {
  for (int64_t j = 0; j < h; ++j) dst[j] = act((C(load(gh, j)) + C(load(bias, j))) + C(load(gi, j)));
}

template <class T>
void rnn_forward(bool relu, const T* gi, const T* gh, const T* bias, T* out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows<C>(rows, h, 1, h, [&](int64_t r, C* pre) {
    const int64_t o = r * h;
    gate(gi + o, gh + o, bias, pre, h, [](C x) { return x; });
    if (relu) {
      for (int64_t j = 0; j < h; ++j) store(out, o + j, unary_apply<UnaryOp::Relu>(pre[j]));
    } else {
      for (int64_t j = 0; j < h; ++j) store(out, o + j, th(pre[j]));
    }
  });
}

template <class T>
void rnn_backward(bool relu, const T* y, const T* dy, T* d_pre, int64_t n) {
  using C = compute_t<T>;
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    if (relu) {  // the gradient flows where the output is positive (PyTorch's threshold_backward)
      for (int64_t k = b; k < e; ++k) store(d_pre, k, C(load(y, k)) > C(0) ? C(load(dy, k)) : C(0));
    } else {
      for (int64_t k = b; k < e; ++k) {
        const C yv = load(y, k);
        store(d_pre, k, C(load(dy, k)) * (C(1) - yv * yv));
      }
    }
  });
}

// The four LSTM gates of one row into i, f, g, o (h values each).
template <class T, class C>
inline void lstm_gates(const T* gi, const T* gh, const T* bias, C* i, C* f, C* g, C* o, int64_t h) {
  gate(gi, gh, bias, i, h, [](C x) { return sig(x); });
  gate(gi + h, gh + h, bias + h, f, h, [](C x) { return sig(x); });
  gate(gi + 2 * h, gh + 2 * h, bias + 2 * h, g, h, [](C x) { return th(x); });
  gate(gi + 3 * h, gh + 3 * h, bias + 3 * h, o, h, [](C x) { return sig(x); });
}

template <class T>
void lstm_forward(const T* gi, const T* gh, const T* bias, const T* c, T* h_out, T* c_out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows<C>(rows, h, 4, 4 * h, [&](int64_t r, C* buf) {
    C* __restrict i = buf;
    C* __restrict f = buf + h;
    C* __restrict g = buf + 2 * h;
    C* __restrict o = buf + 3 * h;
    const int64_t g0 = r * 4 * h, s0 = r * h;
    lstm_gates(gi + g0, gh + g0, bias, i, f, g, o, h);
    for (int64_t j = 0; j < h; ++j) store(c_out, s0 + j, f[j] * C(load(c, s0 + j)) + i[j] * g[j]);
    // tanh of the stored c' (rounded to T), as an op reading it would.
    for (int64_t j = 0; j < h; ++j) store(h_out, s0 + j, o[j] * th(C(load(c_out, s0 + j))));
  });
}

template <class T>
void lstm_backward(const T* gi, const T* gh, const T* bias, const T* c, const T* c_new, const T* dh, const T* dc,
                   T* d_pre, T* dc_prev, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows<C>(rows, h, 4, 5 * h, [&](int64_t r, C* buf) {
    C* __restrict i = buf;
    C* __restrict f = buf + h;
    C* __restrict g = buf + 2 * h;
    C* __restrict o = buf + 3 * h;
    C* __restrict dct = buf + 4 * h;
    const int64_t g0 = r * 4 * h, s0 = r * h;
    lstm_gates(gi + g0, gh + g0, bias, i, f, g, o, h);
    T* dp = d_pre + g0;
    for (int64_t j = 0; j < h; ++j) {
      const C tc = th(C(load(c_new, s0 + j)));
      const C dhv = load(dh, s0 + j);
      dct[j] = C(load(dc, s0 + j)) + dhv * o[j] * (C(1) - tc * tc);
      store(dp, 3 * h + j, dhv * tc * o[j] * (C(1) - o[j]));
    }
    for (int64_t j = 0; j < h; ++j) {
      store(dp, j, dct[j] * g[j] * i[j] * (C(1) - i[j]));
      store(dp, h + j, dct[j] * C(load(c, s0 + j)) * f[j] * (C(1) - f[j]));
      store(dp, 2 * h + j, dct[j] * i[j] * (C(1) - g[j] * g[j]));
      store(dc_prev, s0 + j, dct[j] * f[j]);
    }
  });
}

// GRU gates of one row: r, z and, in hn, the hidden projection of the new
// gate with its bias (n's input before r scales it); n itself.
template <class T, class C>
inline void gru_gates(const T* gi, const T* gh, const T* bias, C* rg, C* zg, C* hn, C* n, int64_t h) {
  gate(gi, gh, bias, rg, h, [](C x) { return sig(x); });
  gate(gi + h, gh + h, bias + h, zg, h, [](C x) { return sig(x); });
  for (int64_t j = 0; j < h; ++j) hn[j] = C(load(gh, 2 * h + j)) + C(load(bias, 2 * h + j));
  for (int64_t j = 0; j < h; ++j) n[j] = th(C(load(gi, 2 * h + j)) + hn[j] * rg[j]);
}

template <class T>
void gru_forward(const T* gi, const T* gh, const T* bias, const T* hs, T* out, int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows<C>(rows, h, 3, 4 * h, [&](int64_t r, C* buf) {
    C* __restrict rg = buf;
    C* __restrict zg = buf + h;
    C* __restrict hn = buf + 2 * h;
    C* __restrict n = buf + 3 * h;
    const int64_t g0 = r * 3 * h, s0 = r * h;
    gru_gates(gi + g0, gh + g0, bias, rg, zg, hn, n, h);
    for (int64_t j = 0; j < h; ++j) store(out, s0 + j, (C(load(hs, s0 + j)) - n[j]) * zg[j] + n[j]);
  });
}

template <class T>
void gru_backward(const T* gi, const T* gh, const T* bias, const T* hs, const T* dh, T* dgi, T* dgh, T* dh_prev,
                  int64_t rows, int64_t h) {
  using C = compute_t<T>;
  for_rows<C>(rows, h, 3, 4 * h, [&](int64_t r, C* buf) {
    C* __restrict rg = buf;
    C* __restrict zg = buf + h;
    C* __restrict hn = buf + 2 * h;
    C* __restrict n = buf + 3 * h;
    const int64_t g0 = r * 3 * h, s0 = r * h;
    gru_gates(gi + g0, gh + g0, bias, rg, zg, hn, n, h);
    T* dgir = dgi + g0;
    T* dghr = dgh + g0;
    for (int64_t j = 0; j < h; ++j) {
      const C hv = load(hs, s0 + j), g = load(dh, s0 + j);
      const C dpn = g * (C(1) - zg[j]) * (C(1) - n[j] * n[j]);
      const C dpr = dpn * hn[j] * rg[j] * (C(1) - rg[j]);
      const C dpz = g * (hv - n[j]) * zg[j] * (C(1) - zg[j]);
      store(dgir, j, dpr);
      store(dgir, h + j, dpz);
      store(dgir, 2 * h + j, dpn);
      store(dghr, j, dpr);
      store(dghr, h + j, dpz);
      store(dghr, 2 * h + j, dpn * rg[j]);
      store(dh_prev, s0 + j, g * zg[j]);
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
