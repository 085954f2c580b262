// Creation primitives (Full, Arange, Random) and the public creation ops.
#include <atomic>
#include <cmath>
#include <mutex>

#include "lucid/graph/trace_hook.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;

static std::vector<Tensor> no_grads(const std::vector<int>& argnums) { return std::vector<Tensor>(argnums.size()); }

// ------------------------------------------------------------------- Full
std::string Full::name() const { return "full"; }
std::vector<TensorMeta> Full::infer(const std::vector<TensorMeta>&) const { return {meta}; }
std::vector<Tensor> Full::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                              const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

void detail::check_scalar_fits(const Scalar& value, DType dt, const char* op) {
  bool ok = true;
  if (dt == DType::Bool) {
    ok = true;
  } else if (!is_floating(dt)) {
    // PyTorch's c10::overflows: a float must lie in [lowest, max] (NaN and
    // the infinities never do); an integer too, except that an unsigned dtype
    // also takes -max..-1, which wrap (x - 1 on uint8 adds 255).
    const double lo = double(integral_min(dt)), hi = double(integral_max(dt));
    if (value.kind == Scalar::Kind::Float)
      ok = value.f >= lo && value.f <= hi;
    else if (dt == DType::UInt8)
      ok = value.i >= -integral_max(dt) && value.i <= integral_max(dt);
    else
      ok = dt == DType::Int64 || (value.i >= integral_min(dt) && value.i <= integral_max(dt));
  } else if (std::isfinite(value.f)) {
    const double max = dt == DType::Float16 ? 65504.0 : (dt == DType::BFloat16 ? 3.3895313892515355e38
                                                          : (dt == DType::Float32 ? 3.4028234663852886e38 : HUGE_VAL));
    ok = std::fabs(value.f) <= max;
  }
  if (!ok) {
    const std::string v = value.kind == Scalar::Kind::Float ? std::to_string(value.f) : std::to_string(value.i);
    fail(op, "(): value cannot be converted to type ", dtype_name(dt), " without overflow (got ", v, ")");
  }
}

// A constant tensor holding `value` converted to `dt` as C does: integers
// wrap to the width of `dt`, NaN is true as a bool. Callers that must refuse
// an out-of-range value check it first (check_scalar_fits).
static Tensor make_full(const Shape& shape, const Scalar& value, DType dt, Device device) {
  double v = value.f;
  int64_t iv = 0;
  if (dt == DType::Bool) {
    v = value.kind == Scalar::Kind::Float ? double(value.f != 0) : double(value.i != 0);
  } else if (!is_floating(dt)) {
    iv = value.kind == Scalar::Kind::Float ? int64_t(value.f) : value.i;  // a float value was checked to fit
    iv = wrap_integral(iv, dt);  // wraps, as PyTorch's wrapped numbers do
    v = double(iv);
  }
  return call<Full>({}, TensorMeta{shape, dt, device}, v, iv);
}

Tensor full(const Shape& shape, Scalar value, std::optional<DType> dtype, Device device) {
  DType dt = dtype ? *dtype
                   : (value.kind == Scalar::Kind::Float ? default_float_dtype()
                                                         : (value.kind == Scalar::Kind::Int ? DType::Int64 : DType::Bool));
  numel(shape);  // negative dims and overflowing sizes raise here
  detail::check_scalar_fits(value, dt, "full");
  return make_full(shape, value, dt, device);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, Scalar value) { return full(t.shape(), value, t.dtype(), t.device()); }
Tensor scalar_tensor(Scalar value, DType dtype, Device device) { return full({}, value, dtype, device); }
Tensor detail::wrapped_scalar_tensor(const Scalar& value, DType dtype, Device device) {
  return make_full({}, value, dtype, device);
}

// ----------------------------------------------------------------- Arange
std::string Arange::name() const { return "arange"; }
std::vector<TensorMeta> Arange::infer(const std::vector<TensorMeta>&) const { return {meta}; }
std::vector<Tensor> Arange::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  LUCID_CHECK(step != 0, "arange: step must be nonzero");
  LUCID_CHECK(std::isfinite(start) && std::isfinite(end), "arange: unsupported range: ", start, " -> ", end);
  LUCID_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
              "upper bound and lower bound inconsistent with step sign");
  const double count = std::ceil((end - start) / step);
  // (converting a double beyond int64 is undefined; such a range could not be stored anyway)
  LUCID_CHECK(count < 9.2e18, "arange(): the range [", start, ", ", end, ") with step ", step, " has ", count,
              " elements, more than a tensor can hold (invalid size, possible overflow?)");
  const int64_t n = std::max<int64_t>(int64_t(count), 0);
  numel({n});
  return call<Arange>({}, start, step, TensorMeta{{n}, dtype, device});
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  LUCID_CHECK(n >= 0 && m >= 0, "eye: n and m must be non-negative, got ", n, " and ", m);
  numel({n, m});  // the result's size, checked before the building blocks are made
  Tensor rows = reshape(arange(0, double(n), 1, DType::Int64, device), {n, 1});
  Tensor cols = reshape(arange(0, double(m), 1, DType::Int64, device), {1, m});
  return cast(eq(rows, cols), dtype);
}

// ----------------------------------------------------------------- Random
std::string Random::name() const { return dist == Distribution::Uniform ? "rand" : "randn"; }
std::vector<TensorMeta> Random::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(TypeError, in[0].dtype == DType::Int64 && in[0].shape == Shape{2},
                "random: the key must be an int64 tensor of shape [2]");
  LUCID_CHECK_T(TypeError, is_floating(dtype), "random: dtype must be floating, got ", dtype_name(dtype));
  return {{shape, dtype, device}};
}
std::vector<Tensor> Random::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                                const std::vector<int>& argnums) const {
  return no_grads(argnums);
}

namespace {
struct Generator {
  std::mutex mu;
  uint64_t seed = 0x853c49e6748fea9bULL;
  uint64_t offset = 0;
};
Generator& generator() {
  static Generator g;
  return g;
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator().mu);
  generator().seed = seed;
  generator().offset = 0;
}
uint64_t initial_seed() { return generator().seed; }

std::pair<uint64_t, uint64_t> next_random_key(uint64_t count) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  const uint64_t off = g.offset;
  g.offset += count;
  return {g.seed, off};
}

Tensor random_key_tensor(uint64_t count, Device device) {
  if (graph::Tracer* tracer = graph::Tracer::current()) return tracer->random_key(count);
  auto [seed, off] = next_random_key(count);
  Tensor key = Tensor::empty({2}, DType::Int64, Device{});
  int64_t* k = key.data<int64_t>();
  k[0] = int64_t(seed);
  k[1] = int64_t(off);
  return to_device(key, device);
}

Tensor random_uniform(const Shape& shape, DType dtype, const Tensor& key, std::optional<Device> device) {
  return call<Random>({key}, Distribution::Uniform, shape, dtype, device.value_or(key.device()));
}
Tensor random_normal(const Shape& shape, DType dtype, const Tensor& key, std::optional<Device> device) {
  return call<Random>({key}, Distribution::Normal, shape, dtype, device.value_or(key.device()));
}
// The shape is checked (numel) before the generator advances: a bad call
// leaves the random stream where it was.
Tensor rand(const Shape& shape, DType dtype, Device device) {
  LUCID_CHECK_T(TypeError, is_floating(dtype), "rand(): dtype must be floating, got ", dtype_name(dtype));
  return random_uniform(shape, dtype, random_key_tensor(uint64_t(numel(shape)), device), device);
}
Tensor randn(const Shape& shape, DType dtype, Device device) {
  LUCID_CHECK_T(TypeError, is_floating(dtype), "randn(): dtype must be floating, got ", dtype_name(dtype));
  return random_normal(shape, dtype, random_key_tensor(uint64_t(numel(shape)), device), device);
}

}  // namespace lucid
