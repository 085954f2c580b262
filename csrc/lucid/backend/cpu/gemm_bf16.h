#pragma once
// A bfloat16 GEMM on the CPU's bf16 dot-product instructions (AMX's
// tdpbf16ps where the CPU has it, else AVX512_BF16's vdpbf16ps: pairs of
// bf16 products summed into float32), for the matmuls of bfloat16 autocast. The BLAS has no bf16 GEMM, and
// widening both operands to float32 for sgemm costs two memory passes and
// half the multiply rate.
#include <cstdint>

#include "lucid/core/dtype.h"

namespace lucid::cpu {

// Whether this CPU runs gemm_bf16 (decided once, at run time: a portable
// build carries the kernel for every x86-64 machine).
bool has_gemm_bf16();

// Row-major C[M,N] = op(A) op(B) in float32, A and B bfloat16 with leading
// dimensions (BLAS's convention); products exact, sums in float32.
// Single-threaded: the caller splits the work. Only where has_gemm_bf16(),
// and only for operands without subnormals (some CPUs' instruction treats
// them as zero): see has_subnormal.
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, float* c, int64_t ldc);

// Whether this CPU has AMX (its tile instructions, granted by the OS):
// gemm_bf16 then runs on them, and can also round C to bfloat16 as it
// stores it (the overload below), one rounding of the float32 sums.
bool has_gemm_bf16_rounded();
// Whether AMX may be used where the CPU has it (on by default; off, the
// vdpbf16ps kernel runs instead).
void set_gemm_bf16_amx(bool allowed);
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, BFloat16* c, int64_t ldc);

// Whether any of the n values is a subnormal (a zero exponent, a non-zero
// fraction).
bool has_subnormal(const BFloat16* x, int64_t n);
}  // namespace lucid::cpu
