#include "lucid/graph/executable.h"

#include <array>
#include <cstring>

#include "lucid/graph/passes.h"
#include "lucid/ops/ops.h"

namespace lucid::graph {

static thread_local uint64_t t_runs = 0;
uint64_t Executable::run_count() { return t_runs; }

Executable::Executable(Graph graph, std::vector<RandomKeyFeed> random_feeds)
    : graph_(std::move(graph)), random_feeds_(std::move(random_feeds)) {
  std::vector<bool> is_random(graph_.feeds.size(), false);
  for (const auto& r : random_feeds_) is_random[r.feed] = true;
  for (size_t f = 0; f < graph_.feeds.size(); ++f) {
    const TensorMeta& m = graph_.values[graph_.feeds[f]].meta;
    feed_buffers_.push_back(Tensor::empty(m.shape, m.dtype, Device{}));
    if (!is_random[f]) scalar_feeds_.push_back(int(f));
  }
  for (size_t c = 0; c < graph_.captures.size(); ++c)
    if (graph_.captures[c].bound_per_call) bound_captures_.push_back(int(c));
}

bool Executable::bindings_valid() const {
  for (const auto& c : graph_.captures) {
    if (c.bound_per_call) continue;
    for (const auto& o : c.owners) {
      auto owner = o.lock();  // expired: a temporary handle, no longer referenced
      if (owner && owner->storage != c.storage) return false;
    }
  }
  return true;
}

static void write_scalar(Tensor& t, double v) {
  void* p = t.raw_data();
  switch (t.dtype()) {
    case DType::Float32: *static_cast<float*>(p) = float(v); break;
    case DType::Float64: *static_cast<double*>(p) = v; break;
    case DType::Int64: *static_cast<int64_t*>(p) = int64_t(v); break;
    case DType::Int32: *static_cast<int32_t*>(p) = int32_t(v); break;
    case DType::Int16: *static_cast<int16_t*>(p) = int16_t(int64_t(v)); break;
    case DType::Int8: *static_cast<int8_t*>(p) = int8_t(int64_t(v)); break;
    case DType::UInt8: *static_cast<uint8_t*>(p) = uint8_t(int64_t(v)); break;
    case DType::Bool: *static_cast<bool*>(p) = v != 0; break;
    case DType::Float16: static_cast<Half*>(p)->bits = float_to_half(float(v)); break;
    case DType::BFloat16: static_cast<BFloat16*>(p)->bits = float_to_bf16(float(v)); break;
  }
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                                    const std::vector<Tensor>& bound) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  // Validate everything before anything runs: a bad call changes nothing.
  LUCID_CHECK(inputs.size() == graph_.inputs.size(), "compiled step: expected ", graph_.inputs.size(),
              " tensor arguments, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& want = graph_.values[graph_.inputs[i]].meta;
    const TensorMeta& got = inputs[i].meta();
    if (got.dtype != want.dtype)
      fail<TypeError>("compiled step: argument ", i, " has dtype ", dtype_name(got.dtype), ", expected ",
                      dtype_name(want.dtype));
    if (got.device != want.device)
      fail<TypeError>("compiled step: argument ", i, " is on device ", got.device.str(), ", expected ",
                      want.device.str());
    LUCID_CHECK(got.shape == want.shape, "compiled step: argument ", i, " has shape ", shape_str(got.shape),
                ", expected ", shape_str(want.shape));
    LUCID_CHECK_T(Error, !inputs[i].is_symbolic(), "compiled step: argument ", i, " is a traced tensor");
  }
  LUCID_CHECK(scalars.size() == scalar_feeds_.size(), "compiled step: expected ", scalar_feeds_.size(),
              " scalar feeds, got ", scalars.size());
  LUCID_CHECK(bound.size() == bound_captures_.size(), "compiled step: expected ", bound_captures_.size(),
              " buffers bound per call, got ", bound.size());
  for (size_t k = 0; k < bound.size(); ++k) {
    // A captured buffer is all of a storage, as a 1-D tensor.
    const TensorMeta& want = graph_.values[graph_.captures[bound_captures_[k]].value].meta;
    const Tensor& b = bound[k];
    LUCID_CHECK_T(Error, !b.is_symbolic(), "compiled step: bound buffer ", k, " is a traced tensor");
    LUCID_CHECK(b.dtype() == want.dtype && b.device() == want.device && b.numel() == want.numel() &&
                    b.offset() == 0 && b.storage_numel() == b.numel() && b.is_contiguous(),
                "compiled step: bound buffer ", k, " is ", meta_str(b.meta()), ", expected a row-major tensor of ",
                want.numel(), " elements of dtype ", dtype_name(want.dtype), " owning its memory");
    for (size_t j = 0; j < k; ++j)
      LUCID_CHECK(bound[j].storage() != bound[k].storage(), "compiled step: bound buffers ", j, " and ", k,
                  " share memory");
  }
  for (size_t k = 0; k < bound.size(); ++k) graph_.captures[bound_captures_[k]].storage = bound[k].storage();
  for (size_t k = 0; k < scalars.size(); ++k) write_scalar(feed_buffers_[scalar_feeds_[k]], scalars[k]);
  for (const auto& r : random_feeds_) {
    auto [seed, offset] = next_random_key(r.draws);
    int64_t* key = feed_buffers_[r.feed].data<int64_t>();
    key[0] = int64_t(seed);
    key[1] = int64_t(offset);
  }
  // The executable reads arguments row-major and as they were when the run
  // began: strided ones, and ones sharing memory with a buffer the run
  // writes (a parameter passed as an argument), are copied.
  std::vector<Tensor> dense;
  const std::vector<Tensor>* args = &inputs;
  auto written = [&](const Tensor& t) {
    for (const auto& w : graph_.writebacks)
      if (graph_.captures[w.capture].storage == t.storage()) return true;
    for (const Tensor& b : bound)
      if (b.storage() == t.storage()) return true;
    return false;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].is_contiguous() || written(inputs[i])) {
      if (dense.empty()) dense = inputs;
      dense[i] = contiguous_copy(inputs[i]);
      args = &dense;
    }
  ++t_runs;
  return execute(*args, feed_buffers_);
}

static std::array<Compiler, 3>& compilers() {
  static std::array<Compiler, 3> table{};
  return table;
}

void register_compiler(DeviceType device, Compiler c) { compilers()[size_t(device)] = c; }

std::shared_ptr<Executable> compile(Graph graph, std::vector<RandomKeyFeed> random_feeds, DeviceType device) {
  Compiler c = compilers()[size_t(device)];
  if (!c)
    fail<NotImplementedError>("compiled steps are not available for the ", device_type_name(device), " device");
  optimize(graph);
  return c(std::move(graph), std::move(random_feeds));
}

std::shared_ptr<Executable> compile(Graph graph, std::vector<RandomKeyFeed> random_feeds, const CompileFn& compiler) {
  optimize(graph);
  return compiler(std::move(graph), std::move(random_feeds));
}

}  // namespace lucid::graph
