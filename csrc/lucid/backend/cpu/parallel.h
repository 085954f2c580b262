#pragma once
// The CPU thread pool: one per process, sized from the hardware (or
// LUCID_NUM_THREADS / set_num_threads), shared by every kernel and by BLAS.
#include <cstdint>
#include <functional>

namespace lucid::cpu {

int num_threads();
void set_num_threads(int n);

// Runs fn(begin, end) over [0, n) split into chunks of at least `grain`
// elements, on the pool plus the calling thread. Nested calls run inline.
// The first exception thrown by a chunk is rethrown here.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Elements below which splitting costs more than it gains, for simple
// elementwise work.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace lucid::cpu
