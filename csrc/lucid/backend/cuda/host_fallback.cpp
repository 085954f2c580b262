// Primitives with no CUDA kernel yet run on the host: the operands are
// copied to host memory (a synchronising read-back), the CPU kernel runs,
// and the results are copied back to the device. Correct but slow, and not
// capturable: a compiled step holding one of these runs its schedule as
// plain launches (its describe() says why). Each wants a device kernel:
// ArgSort, TopK, NonZero (sorting/selection), Scan (cumsum/cumprod), Split,
// ScatterReduce (scatter_reduce/index_reduce),
// RecurrentCell(+Backward); the decompositions and
// solvers run LAPACK on the host (cuSOLVER would be their device form); the
// Gamma/Poisson/Binomial draws and their reparameterisation gradients
// (RandomParametric, ReparamGrad) run the CPU samplers.
#include <cstring>
#include <vector>

#include "lucid/backend/cuda/runtime.h"
#include "lucid/ops/kernels.h"

namespace lucid::cuda {

namespace {

void host_fallback(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  Runtime& rt = Runtime::get();
  std::vector<TensorMeta> in_metas, out_metas;
  std::vector<Tensor> host_in, host_out;
  for (const auto& a : in) {
    TensorMeta m = *a.meta;
    m.device = Device{};
    Tensor t = Tensor::empty(m.shape, m.dtype, m.device);
    if (a.meta->device.type == DeviceType::CUDA) rt.device_to_host(t.raw_data(), a.data, t.nbytes());
    else if (t.nbytes()) std::memcpy(t.raw_data(), a.data, t.nbytes());
    in_metas.push_back(m);
    host_in.push_back(t);
  }
  for (const auto& a : out) {
    TensorMeta m = *a.meta;
    m.device = Device{};
    out_metas.push_back(m);
    host_out.push_back(Tensor::empty(m.shape, m.dtype, m.device));
  }
  std::vector<ConstArg> hin;
  std::vector<MutArg> hout;
  for (size_t i = 0; i < in.size(); ++i) hin.push_back({host_in[i].raw_data(), &in_metas[i]});
  for (size_t i = 0; i < out.size(); ++i) hout.push_back({host_out[i].raw_data(), &out_metas[i]});
  find_kernel(p, DeviceType::CPU)(p, hin, hout);
  // host_to_device has consumed the host buffer when it returns
  for (size_t i = 0; i < out.size(); ++i) rt.host_to_device(out[i].data, host_out[i].raw_data(), host_out[i].nbytes());
}

LUCID_REGISTER_KERNEL(ArgSort, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(TopK, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(NonZero, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Scan, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Split, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(ScatterReduce, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(RecurrentCell, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(RecurrentCellBackward, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(LuFactor, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(LuSolve, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Inverse, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(LinearSolve, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Slogdet, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Det, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Cholesky, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(TriangularSolve, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Qr, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Eigh, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(Svd, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(RandomParametric, CUDA, host_fallback);
LUCID_REGISTER_KERNEL(ReparamGrad, CUDA, host_fallback);

}  // namespace

}  // namespace lucid::cuda
