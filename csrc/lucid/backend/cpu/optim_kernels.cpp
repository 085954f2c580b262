// The CPU kernel of the optimizers' EngineUpdate primitive: the kind's
// element-wise rule (Algorithm::update_elements) over the parameter's memory,
// split over the thread pool. Eager steps and compiled steps both run it.
#include <cstring>

#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/kernels.h"
#include "lucid/optim/update_primitive.h"

namespace lucid::cpu {

namespace {

void engine_update_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& up = static_cast<const optim::EngineUpdate&>(p);
  // The rule updates in place: start the outputs from the old values unless
  // they are the inputs' own buffers (the eager step, or the executable's plan).
  for (int k = 0; k <= up.num_buffers; ++k) {
    const ConstArg& src = in[k == 0 ? 0 : 1 + k];
    if (out[k].data != src.data)
      std::memcpy(out[k].data, src.data, size_t(src.meta->numel()) * itemsize(src.meta->dtype));
  }
  void* buffers[optim::kMaxEngineBuffers] = {};
  for (int k = 0, next = 1; k < optim::kMaxEngineBuffers; ++k)
    if (up.need >> k & 1) buffers[k] = out[next++].data;
  double scalars[optim::kMaxEngineScalars];
  const size_t first = 2 + size_t(up.num_buffers);
  LUCID_CHECK(in.size() - first <= optim::kMaxEngineScalars, up.name(), ": too many scalars");
  for (size_t i = first; i < in.size(); ++i) scalars[i - first] = *static_cast<const double*>(in[i].data);
  const TensorMeta& m = *out[0].meta;
  const int64_t n = m.numel();
  auto run = [&](int64_t begin, int64_t end) {
    up.algo->update_elements(m.dtype, up.flags, begin, end, out[0].data, in[1].data, buffers, scalars);
  };
  if (n < kElementwiseGrain) run(0, n);
  else parallel_for(n, kElementwiseGrain, run);
}
LUCID_REGISTER_KERNEL(EngineUpdate, CPU, engine_update_kernel);

}  // namespace

}  // namespace lucid::cpu
