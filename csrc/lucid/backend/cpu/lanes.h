#pragma once
// The sum of a contiguous run shared by the CPU kernels (reductions and the
// row kernels): one accumulation order everywhere.
#include <cstdint>

#include "lucid/backend/cpu/dispatch.h"

namespace lucid::cpu {

// Sum of a contiguous run in 16 interleaved lanes (vectorisable: a single
// running sum is a serial dependency chain), combined pairwise.
template <class T, class A>
A lanes_sum(const T* v, int64_t n) {
  A s[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int j = 0; j < 16; ++j) s[j] += A(load(v, k + j));
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  for (; k < n; ++k) s[0] += A(load(v, k));
  return s[0];
}

}  // namespace lucid::cpu
