// CPU kernel of ConvTranspose2d. Each (image, group) task multiplies the
// group's weight, transposed, with the image's input channels (one GEMM:
// taps [Cout/g * kh * kw, H * W]) and scatter-adds the taps into its output
// planes, which no other task writes. 16-bit floats run in float32 and are
// rounded once at the end.
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/blas.h"
#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/window.h"
#include "lucid/ops/conv_transpose.h"
#include "lucid/ops/kernels.h"

namespace lucid::cpu {

namespace {

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    blas::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  } else {
    blas::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  }
}

// x [N, Cin, H, W], w [Cin, Cout/g, kh, kw] -> y [N, Cout, OH, OW] (float or double).
template <class T>
void conv_transpose_impl(const ConvTranspose2d& p, const T* x, const T* w, T* y, int64_t n, int64_t cin, int64_t h,
                         int64_t wd, int64_t cout_g) {
  const Window2d& win = p.win;
  const int64_t g = p.groups, cin_g = cin / g, kk = win.kh * win.kw, taps = cout_g * kk, l = h * wd;
  const int64_t plane = p.out_h * p.out_w;
  parallel_for(n * g, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> cols(size_t(taps * l));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t img = task / g, grp = task % g;
      // cols [taps, l] = w_g^T [taps, cin_g] @ x_g [cin_g, l]
      gemm<T>(true, false, taps, l, cin_g, w + grp * cin_g * taps, taps, x + (img * cin + grp * cin_g) * l, l,
              cols.data(), l);
      T* out = y + (img * g + grp) * cout_g * plane;
      std::fill(out, out + cout_g * plane, T(0));
      for (int64_t co = 0; co < cout_g; ++co)
        scatter_taps_plane<T>(win, cols.data(), out + co * plane, 1, 0, co, p.out_h, p.out_w, h, wd);
    }
  });
}

void conv_transpose2d_kernel(const Primitive& prim, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& p = static_cast<const ConvTranspose2d&>(prim);
  const Shape &xs = in[0].meta->shape, &ws = in[1].meta->shape;
  const DType dt = out[0].meta->dtype;
  const int64_t total = out[0].meta->numel();
  if (total == 0) return;
  if (xs[0] * xs[1] * xs[2] * xs[3] == 0 || ws[1] == 0) {
    std::memset(out[0].data, 0, size_t(total) * itemsize(dt));
    return;
  }
  const int64_t n = xs[0], cin = xs[1], h = xs[2], wd = xs[3], cout_g = ws[1];
  if (dt == DType::Float32) {
    conv_transpose_impl(p, static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                        static_cast<float*>(out[0].data), n, cin, h, wd, cout_g);
  } else if (dt == DType::Float64) {
    conv_transpose_impl(p, static_cast<const double*>(in[0].data), static_cast<const double*>(in[1].data),
                        static_cast<double*>(out[0].data), n, cin, h, wd, cout_g);
  } else {
    LUCID_DISPATCH_FLOAT(dt, "conv_transpose2d", [&] {
      const int64_t nx = in[0].meta->numel(), nw = in[1].meta->numel();
      std::vector<float> fx(static_cast<size_t>(nx)), fw(static_cast<size_t>(nw)), fy(static_cast<size_t>(total));
      const T* xp = static_cast<const T*>(in[0].data);
      const T* wp = static_cast<const T*>(in[1].data);
      for (int64_t i = 0; i < nx; ++i) fx[size_t(i)] = float(load(xp, i));
      for (int64_t i = 0; i < nw; ++i) fw[size_t(i)] = float(load(wp, i));
      conv_transpose_impl(p, fx.data(), fw.data(), fy.data(), n, cin, h, wd, cout_g);
      T* yp = static_cast<T*>(out[0].data);
      for (int64_t i = 0; i < total; ++i) store(yp, i, fy[size_t(i)]);
    });
  }
}
LUCID_REGISTER_KERNEL(ConvTranspose2d, CPU, conv_transpose2d_kernel);

}  // namespace

}  // namespace lucid::cpu
