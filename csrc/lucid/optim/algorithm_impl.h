#pragma once
// AlgorithmImpl<Traits>: an optimizer kind built from its traits, which say
// once what the kind is (kinds_*.cpp):
//   kName, kHasStep, buffers(), scalar_state(), validate(h), flags(h),
//   needed(flags) (constexpr), buffer_init(slot, group, defaults),
//   init_scalars(group), scalars(h, state) -> Scalars<double> (the one
//   host-side function per kind), advance(state, h), and
//   rule(param, grad, buffers*, scalars, flags) forwarding to rules.h.
// Everything else — the element loop a backend kernel runs, the ops path,
// state creation — is written here once for all kinds, without naming a
// backend.
#include <array>
#include <type_traits>
#include <utility>

#include "lucid/autograd/grad_mode.h"
#include "lucid/core/element.h"
#include "lucid/graph/trace_hook.h"
#include "lucid/ops/dispatch.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/engine.h"
#include "lucid/optim/rules.h"

namespace lucid::optim {

template <class S>
std::vector<double> scalars_to_vector(const S& s) {
  std::vector<double> v;
  s.for_each([&](const auto& x) { v.push_back(double(x)); });
  return v;
}

template <class S, class T>
S scalars_from(const T* v) {
  S s;
  size_t i = 0;
  s.for_each([&](auto& x) { x = std::decay_t<decltype(x)>(v[i++]); });
  return s;
}
template <class S, class T>
S scalars_from_vector(const std::vector<T>& v) {
  return scalars_from<S>(v.data());
}

// The rule over elements [begin, end) with the flags fixed at compile time
// (Bits), so it inlines to straight-line, vectorisable code.
template <class Tr, class T, unsigned Bits>
void element_loop(T* param, const T* grad, void* const* bufs, int64_t begin, int64_t end,
                  const typename Tr::template Scalars<element::compute_t<T>>& scalars) {
  using C = element::compute_t<T>;
  constexpr uint32_t need = Tr::needed(Tr::Flags::from_bits(Bits));
  T* __restrict p = param;
  const T* __restrict g = grad;
  T* __restrict q0 = static_cast<T*>(bufs[0]);
  T* __restrict q1 = static_cast<T*>(bufs[1]);
  T* __restrict q2 = static_cast<T*>(bufs[2]);
  const auto s = scalars;
  // Declared here, not passed: the rule sees compile-time constants.
  constexpr typename Tr::Flags flags = Tr::Flags::from_bits(Bits);
  for (int64_t i = begin; i < end; ++i) {
    C pv = element::load(p, i);
    const C gv = element::load(g, i);
    C b[kMaxEngineBuffers] = {};
    if constexpr ((need & 1) != 0) b[0] = element::load(q0, i);
    if constexpr ((need & 2) != 0) b[1] = element::load(q1, i);
    if constexpr ((need & 4) != 0) b[2] = element::load(q2, i);
    Tr::rule(pv, gv, b, s, flags);
    element::store(p, i, pv);
    if constexpr ((need & 1) != 0) element::store(q0, i, b[0]);
    if constexpr ((need & 2) != 0) element::store(q1, i, b[1]);
    if constexpr ((need & 4) != 0) element::store(q2, i, b[2]);
  }
}

template <class Tr, class T>
using ElementLoop = void (*)(T*, const T*, void* const*, int64_t, int64_t,
                             const typename Tr::template Scalars<element::compute_t<T>>&);

template <class Tr, class T, unsigned... Bits>
constexpr std::array<ElementLoop<Tr, T>, sizeof...(Bits)> loop_table(std::integer_sequence<unsigned, Bits...>) {
  return {&element_loop<Tr, T, Bits>...};
}

template <class Tr, class = void>
struct IntegerStep : std::false_type {};
template <class Tr>
struct IntegerStep<Tr, std::void_t<decltype(Tr::kIntegerStep)>> : std::bool_constant<Tr::kIntegerStep> {};

template <class Tr>
class AlgorithmImpl final : public Algorithm {
 public:
  using Flags = typename Tr::Flags;
  template <class V>
  using Scalars = typename Tr::template Scalars<V>;

  AlgorithmImpl() : buffers_(Tr::buffers()), scalar_state_(Tr::scalar_state()) {
    static_assert(Flags::kCount <= 4, "flag bitmask too wide for the dispatch table");
    LUCID_CHECK(buffers_.size() <= size_t(kMaxEngineBuffers) && Scalars<double>::names().size() <= kMaxEngineScalars,
                Tr::kName, ": more state buffers or scalars than an EngineUpdate carries");
  }

  const char* name() const override { return Tr::kName; }
  void validate(const Hyper& h) const override { Tr::validate(h); }
  const std::vector<std::string>& buffer_names() const override { return buffers_; }
  const std::vector<std::string>& scalar_state_names() const override { return scalar_state_; }
  bool has_step() const override { return Tr::kHasStep; }
  bool integer_step() const override { return IntegerStep<Tr>::value; }
  uint32_t needed_buffers(const Hyper& h) const override { return Tr::needed(Tr::flags(h)); }
  uint32_t required_buffers() const override { return Tr::needed(Flags{}); }
  uint32_t flag_bits(const Hyper& h) const override { return Tr::flags(h).bits(); }
  std::vector<const char*> flag_names() const override { return Flags::names(); }
  std::vector<const char*> host_scalar_names() const override { return Scalars<double>::names(); }

  void init_state(ParamState& st, const Tensor& param, const Hyper& group, const Hyper& defaults) const override {
    // State is concrete even when a trace is active, and has no history.
    graph::TraceScope no_trace(nullptr);
    autograd::NoGradGuard no_grad;
    st.buffers.resize(buffers_.size());
    const uint32_t need = needed_buffers(group);
    for (size_t k = 0; k < buffers_.size(); ++k) {
      if (!(need >> k & 1) || st.buffers[k].defined()) continue;
      st.buffers[k] = full(param.shape(), Tr::buffer_init(k, group, defaults), param.dtype(), param.device());
      st.fresh |= 1u << k;
      st.exists = true;
    }
    if (!st.exists && Tr::kHasStep) {
      st.exists = true;
      st.step = 0;
    }
    if (st.scalars.size() != scalar_state_.size()) st.scalars = Tr::init_scalars(group);
  }

  std::vector<double> host_scalars(const ParamState& st, const Hyper& h) const override {
    return scalars_to_vector(Tr::scalars(h, st));
  }

  void update_elements(DType dtype, uint32_t flag_bits, int64_t begin, int64_t end, void* param, const void* grad,
                       void* const* buffers, const double* scalars) const override {
    auto run = [&](auto tag) {
      using T = decltype(tag);
      static constexpr auto table = loop_table<Tr, T>(std::make_integer_sequence<unsigned, 1u << Flags::kCount>{});
      table[flag_bits](static_cast<T*>(param), static_cast<const T*>(grad), buffers, begin, end,
                       scalars_from<Scalars<element::compute_t<T>>>(scalars));
    };
    switch (dtype) {
      case DType::Float32: return run(float{});
      case DType::Float64: return run(double{});
      case DType::Float16: return run(Half{});
      case DType::BFloat16: return run(BFloat16{});
      default: fail<TypeError>(Tr::kName, ": not implemented for ", dtype_name(dtype));
    }
  }

  std::vector<Tensor> update_tensors(uint32_t flag_bits, const Tensor& param, const Tensor& grad,
                                     const std::vector<Tensor>& buffers,
                                     const std::vector<Tensor>& scalars) const override {
    const auto names = Scalars<double>::names();
    LUCID_CHECK(scalars.size() == names.size(), Tr::kName, ": expected ", names.size(), " scalars, got ",
                scalars.size());
    const Flags f = Flags::from_bits(flag_bits);
    const uint32_t need = Tr::needed(f);
    LUCID_CHECK(buffers.size() == size_t(__builtin_popcount(need)), Tr::kName, ": expected ",
                __builtin_popcount(need), " state buffers, got ", buffers.size());
    autograd::NoGradGuard no_grad;
    // Half-precision parameters compute in float32, as the fused loop does.
    const DType dt = param.dtype();
    const DType cdt = is_half(dt) ? DType::Float32 : dt;
    Tensor p = cast(param.detach(), cdt);
    const Tensor g = cast(grad.detach(), cdt);
    Tensor b[kMaxEngineBuffers];
    for (size_t k = 0, next = 0; k < buffers_.size(); ++k)
      if (need >> k & 1) b[k] = cast(buffers[next++], cdt);
    std::vector<Tensor> feeds;
    for (const Tensor& s : scalars) feeds.push_back(cast(s, cdt));
    const auto s = scalars_from_vector<Scalars<Tensor>>(feeds);
    Tr::rule(p, g, b, s, f);
    std::vector<Tensor> out{cast(p, dt)};
    for (size_t k = 0; k < buffers_.size(); ++k)
      if (need >> k & 1) out.push_back(cast(b[k], dt));
    return out;
  }

  void ops_update(const Tensor& param, const Tensor& grad, ParamState& st, const std::vector<Tensor>& scalars,
                  const Hyper& h) const override {
    const uint32_t need = needed_buffers(h);
    std::vector<Tensor> buffers;
    for (size_t k = 0; k < buffers_.size(); ++k)
      if (need >> k & 1) {
        LUCID_CHECK(st.buffers[k].defined(), Tr::kName, ": state '", buffers_[k], "' was not created");
        buffers.push_back(st.buffers[k]);
      }
    const std::vector<Tensor> next = update_tensors(flag_bits(h), param, grad, buffers, scalars);
    assign_data(param, next[0]);
    for (size_t j = 0; j < buffers.size(); ++j) assign_data(buffers[j], next[1 + j]);
  }

  void advance(ParamState& st, const Hyper& h) const override {
    Tr::advance(st, h);
    st.fresh = 0;
  }

 private:
  std::vector<std::string> buffers_, scalar_state_;
};

}  // namespace lucid::optim
