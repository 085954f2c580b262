// CPU matmul: BLAS for float32/float64, float16 through float32, bfloat16
// on the bf16 dot-product instruction where the CPU has it (else through
// float32), a plain loop for integer dtypes.
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "lucid/backend/cpu/blas.h"
#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/gemm_bf16.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

template <class T>
void gemm_naive(const Gemm& g, const T* a, const T* b, T* c) {
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n;
  parallel_for(g.batch * g.m, 16, [&](int64_t s, int64_t e) {
    for (int64_t q = s; q < e; ++q) {
      const int64_t bi = q / g.m, i = q % g.m;
      const T* A = a + bi * g.m * g.k;
      const T* B = b + bi * g.k * g.n;
      T* C = c + bi * g.m * g.n;
      for (int64_t j = 0; j < g.n; ++j) {
        compute_t<T> acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const auto av = load(A, g.trans_a ? p * lda + i : i * lda + p);
          const auto bv = load(B, g.trans_b ? j * ldb + p : p * ldb + j);
          acc += av * bv;
        }
        store(C, i * g.n + j, acc);
      }
    }
  });
}

// BLAS runs single-threaded; the pool splits the work. One set of threads
// for everything: BLAS's own spinning workers on top of the pool's
// oversubscribe small machines badly (a 64x256x784 GEMM went from 0.2 ms to
// 11 ms with both active on two cores).
template <class T, class TC, class GemmFn>
void gemm_blas(const Gemm& g, const T* a, const T* b, TC* c, GemmFn gemm) {
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n;
  const int64_t flops = g.m * g.n * g.k;
  const int threads = num_threads();
  // Pieces: batch entries first, then rows (M), else columns (N).
  const bool split_rows = g.m >= g.n || g.n < 64;
  // Whole GEMMs per task when the batch alone keeps every thread busy.
  const int64_t per_batch = flops < (int64_t(1) << 18) || threads == 1 || g.batch >= 4 * threads ? 1 : threads;
  const int64_t extent = split_rows ? g.m : g.n;
  const int64_t pieces = std::min<int64_t>(per_batch, std::max<int64_t>(1, extent / 16));
  if constexpr (std::is_same_v<T, float> && std::is_same_v<TC, float>) {
    if (pieces == 1 && g.batch > 1) {  // whole GEMMs per task: one batched call per range
      parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
        blas::sgemm_batch(g.trans_a, g.trans_b, g.m, g.n, g.k, a + begin * g.m * g.k, lda, g.m * g.k,
                          b + begin * g.k * g.n, ldb, g.k * g.n, c + begin * g.m * g.n, g.n, g.m * g.n, end - begin);
      });
      return;
    }
  }
  parallel_for(g.batch * pieces, 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const int64_t bi = q / pieces, piece = q % pieces;
      const int64_t lo = extent * piece / pieces, hi = extent * (piece + 1) / pieces;
      const T* A = a + bi * g.m * g.k;
      const T* B = b + bi * g.k * g.n;
      TC* C = c + bi * g.m * g.n;
      if (split_rows) {
        // rows lo..hi of op(A): row r starts at r*lda (no trans) or column r (trans)
        const T* As = g.trans_a ? A + lo : A + lo * lda;
        gemm(g.trans_a, g.trans_b, hi - lo, g.n, g.k, 1, As, lda, B, ldb, 0, C + lo * g.n, g.n);
      } else {
        const T* Bs = g.trans_b ? B + lo * ldb : B + lo;
        gemm(g.trans_a, g.trans_b, g.m, hi - lo, g.k, 1, A, lda, Bs, ldb, 0, C + lo, g.n);
      }
    }
  });
}

void matmul_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Gemm g = static_cast<const Matmul&>(p).gemm(in[0].meta->shape, in[1].meta->shape);
  const DType dt = out[0].meta->dtype;
  if (g.m * g.n == 0) return;
  if (g.k == 0) {
    std::memset(out[0].data, 0, size_t(out[0].meta->numel()) * itemsize(dt));
    return;
  }
  switch (dt) {
    case DType::Float32:
      gemm_blas(g, static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                static_cast<float*>(out[0].data), blas::sgemm);
      return;
    case DType::Float64:
      gemm_blas(g, static_cast<const double*>(in[0].data), static_cast<const double*>(in[1].data),
                static_cast<double*>(out[0].data), blas::dgemm);
      return;
    case DType::Float16:
    case DType::BFloat16: {
      // Sums in float32, rounded back once. bfloat16 on the CPU's bf16
      // dot-product instruction where it has one and no operand holds a
      // subnormal (which that instruction may read as zero); otherwise both
      // operands widened to float32 (bulk conversions, F16C where built for
      // it) for sgemm. Scratch is uninitialised: it is written whole before
      // it is read; the product's comes from the device allocator, whose
      // cache keeps its pages mapped from one step to the next.
      const int64_t nc = out[0].meta->numel();
      const int64_t na = in[0].meta->numel(), nb = in[1].meta->numel();
      auto bf16 = [](const ConstArg& arg) { return static_cast<const BFloat16*>(arg.data); };
      const bool bf16_operands = dt == DType::BFloat16 && has_gemm_bf16() && !has_subnormal(bf16(in[0]), na) &&
                                 !has_subnormal(bf16(in[1]), nb);
      if (bf16_operands && has_gemm_bf16_rounded()) {  // rounded to bfloat16 as the tiles are stored
        gemm_blas(g, bf16(in[0]), bf16(in[1]), static_cast<BFloat16*>(out[0].data),
                  [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, float, const BFloat16* a, int64_t lda,
                     const BFloat16* b, int64_t ldb, float, BFloat16* c, int64_t ldc) {
                    gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
                  });
        return;
      }
      const Tensor product = Tensor::empty({nc}, DType::Float32);
      float* const fc = product.data<float>();
      if (bf16_operands) {
        gemm_blas(g, bf16(in[0]), bf16(in[1]), fc,
                  [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, float, const BFloat16* a, int64_t lda,
                     const BFloat16* b, int64_t ldb, float, float* c, int64_t ldc) {
                    gemm_bf16(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
                  });
      } else {
        std::unique_ptr<float[]> fa(new float[size_t(na)]), fb(new float[size_t(nb)]);
        auto widen = [](const void* src, float* dst, int64_t n, DType t) {
          parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
            if (t == DType::Float16)
              half_to_float(static_cast<const Half*>(src) + b, dst + b, e - b);
            else
              bf16_to_float(static_cast<const BFloat16*>(src) + b, dst + b, e - b);
          });
        };
        widen(in[0].data, fa.get(), na, dt);
        widen(in[1].data, fb.get(), nb, dt);
        gemm_blas(g, fa.get(), fb.get(), fc, blas::sgemm);
      }
      parallel_for(nc, kElementwiseGrain, [&](int64_t b, int64_t e) {
        if (dt == DType::Float16)
          float_to_half(fc + b, static_cast<Half*>(out[0].data) + b, e - b);
        else
          float_to_bf16(fc + b, static_cast<BFloat16*>(out[0].data) + b, e - b);
      });
      return;
    }
    default:
      LUCID_DISPATCH_ALL(dt, "matmul", [&] {
        gemm_naive(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                   static_cast<T*>(out[0].data));
      });
  }
}
LUCID_REGISTER_KERNEL(Matmul, CPU, matmul_kernel);

}  // namespace

}  // namespace lucid::cpu
