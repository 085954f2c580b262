#include "lucid/api/data.h"

#include <cstring>

#include "lucid/graph/trace_hook.h"

namespace lucid {

Tensor from_data(const void* data, int64_t n, DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(shape, dtype, Device{});
  LUCID_CHECK(n == t.numel(), "from_vector: ", n, " values cannot fill a tensor of shape ", shape_str(shape), " (",
              t.numel(), " elements)");
  if (n) std::memcpy(t.raw_data(), data, t.nbytes());
  return t;
}

void copy_to(const Tensor& t, DType dtype, void* out) {
  Tensor c = t.detach();
  if (c.is_symbolic()) c.raw_data("reading values");  // the core's error for a traced tensor
  {
    graph::TraceScope eager(nullptr);
    if (c.device().type != DeviceType::CPU) c = to_device(c, Device{});
    c = contiguous(cast(c, dtype));
  }
  if (c.numel()) std::memcpy(out, c.raw_data(), c.nbytes());
}

Scalar item(const Tensor& t) {
  LUCID_CHECK_T(TypeError, t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  if (t.dtype() == DType::Bool) {
    int32_t v;
    copy_to(t, DType::Int32, &v);
    return Scalar::boolean(v != 0);
  }
  if (is_integral(t.dtype())) {
    int64_t v;
    copy_to(t, DType::Int64, &v);
    return Scalar(v);
  }
  double v;
  copy_to(t, DType::Float64, &v);
  return Scalar(v);
}

}  // namespace lucid
