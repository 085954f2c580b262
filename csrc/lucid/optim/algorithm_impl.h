#pragma once
// AlgorithmImpl<Traits>: an optimizer kind built from its traits, which say
// once what the kind is (kinds_*.cpp):
//   kName, kHasStep, buffers(), scalar_state(), validate(h), flags(h),
//   needed(flags) (constexpr), buffer_init(slot, group, defaults),
//   init_scalars(group), scalars(h, state) -> Scalars<double> (the one
//   host-side function per kind), advance(state, h), and
//   rule(param, grad, buffers*, scalars, flags) forwarding to rules.h.
// Everything else — the fused eager loop, the ops path, state creation — is
// written here once for all kinds.
#include <array>
#include <utility>

#include "lucid/autograd/grad_mode.h"
#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/graph/tracer.h"
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
S scalars_from_vector(const std::vector<T>& v) {
  S s;
  size_t i = 0;
  s.for_each([&](auto& x) { x = std::decay_t<decltype(x)>(v[i++]); });
  return s;
}

constexpr int kMaxBuffers = 3;

// One fused pass over a parameter's memory with the flags fixed at compile
// time (Bits), so the rule inlines to straight-line, vectorisable code.
template <class Tr, class T, unsigned Bits>
void fused_kernel(T* param, const T* grad, T* const* bufs, int64_t n,
                  const typename Tr::template Scalars<cpu::compute_t<T>>& scalars) {
  using C = cpu::compute_t<T>;
  constexpr uint32_t need = Tr::needed(Tr::Flags::from_bits(Bits));
  T* const b0 = bufs[0];
  T* const b1 = bufs[1];
  T* const b2 = bufs[2];
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    T* __restrict p = param;
    const T* __restrict g = grad;
    T* __restrict q0 = b0;
    T* __restrict q1 = b1;
    T* __restrict q2 = b2;
    const auto s = scalars;
    // Declared here, not captured: the rule sees compile-time constants.
    constexpr typename Tr::Flags flags = Tr::Flags::from_bits(Bits);
    for (int64_t i = begin; i < end; ++i) {
      C pv = cpu::load(p, i);
      const C gv = cpu::load(g, i);
      C b[kMaxBuffers] = {};
      if constexpr ((need & 1) != 0) b[0] = cpu::load(q0, i);
      if constexpr ((need & 2) != 0) b[1] = cpu::load(q1, i);
      if constexpr ((need & 4) != 0) b[2] = cpu::load(q2, i);
      Tr::rule(pv, gv, b, s, flags);
      cpu::store(p, i, pv);
      if constexpr ((need & 1) != 0) cpu::store(q0, i, b[0]);
      if constexpr ((need & 2) != 0) cpu::store(q1, i, b[1]);
      if constexpr ((need & 4) != 0) cpu::store(q2, i, b[2]);
    }
  });
}

template <class Tr, class T>
using FusedKernel = void (*)(T*, const T*, T* const*, int64_t,
                             const typename Tr::template Scalars<cpu::compute_t<T>>&);

template <class Tr, class T, unsigned... Bits>
constexpr std::array<FusedKernel<Tr, T>, sizeof...(Bits)> fused_table(std::integer_sequence<unsigned, Bits...>) {
  return {&fused_kernel<Tr, T, Bits>...};
}

template <class Tr>
class AlgorithmImpl final : public Algorithm {
 public:
  using Flags = typename Tr::Flags;
  template <class V>
  using Scalars = typename Tr::template Scalars<V>;

  AlgorithmImpl() : buffers_(Tr::buffers()), scalar_state_(Tr::scalar_state()) {
    static_assert(Flags::kCount <= 4, "flag bitmask too wide for the dispatch table");
  }

  const char* name() const override { return Tr::kName; }
  void validate(const Hyper& h) const override { Tr::validate(h); }
  const std::vector<std::string>& buffer_names() const override { return buffers_; }
  const std::vector<std::string>& scalar_state_names() const override { return scalar_state_; }
  bool has_step() const override { return Tr::kHasStep; }
  uint32_t needed_buffers(const Hyper& h) const override { return Tr::needed(Tr::flags(h)); }
  uint32_t required_buffers() const override { return Tr::needed(Flags{}); }
  uint32_t flag_bits(const Hyper& h) const override { return Tr::flags(h).bits(); }
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

  void fused_update(const Tensor& param, const Tensor& grad, ParamState& st, const std::vector<double>& scalars,
                    const Hyper& h) const override {
    if (param.device().type != DeviceType::CPU || !param.is_contiguous() || !grad.is_contiguous()) {
      // Other devices (and strided views) run the same rule through ops.
      std::vector<Tensor> feeds;
      const DType cdt = is_half(param.dtype()) ? DType::Float32 : param.dtype();
      for (double v : scalars) feeds.push_back(scalar_tensor(v, cdt, param.device()));
      ops_update(param, grad, st, feeds, h);
      return;
    }
    const Flags f = Tr::flags(h);
    const uint32_t need = Tr::needed(f);
    LUCID_DISPATCH_FLOAT(param.dtype(), Tr::kName, [&] {
      using Cmp = cpu::compute_t<T>;
      T* bufs[kMaxBuffers] = {nullptr, nullptr, nullptr};
      for (size_t k = 0; k < buffers_.size(); ++k)
        if (need >> k & 1) bufs[k] = st.buffers[k].template data<T>("optimizer state");
      static constexpr auto table =
          fused_table<Tr, T>(std::make_integer_sequence<unsigned, 1u << Flags::kCount>{});
      const auto s = scalars_from_vector<Scalars<Cmp>>(scalars);
      table[f.bits()](param.template data<T>("optimizer step"), grad.template data<T>("optimizer step"), bufs,
                      param.numel(), s);
    });
    param.storage()->bump_version();
    for (size_t k = 0; k < buffers_.size(); ++k)
      if (need >> k & 1) st.buffers[k].storage()->bump_version();
  }

  void ops_update(const Tensor& param, const Tensor& grad, ParamState& st, const std::vector<Tensor>& scalars,
                  const Hyper& h) const override {
    const auto names = Scalars<double>::names();
    LUCID_CHECK(scalars.size() == names.size(), Tr::kName, ": expected ", names.size(), " scalars, got ",
                scalars.size());
    const Flags f = Tr::flags(h);
    const uint32_t need = Tr::needed(f);
    autograd::NoGradGuard no_grad;
    // Half-precision parameters compute in float32, as the fused loop does.
    const DType dt = param.dtype();
    const DType cdt = is_half(dt) ? DType::Float32 : dt;
    Tensor p = cast(param.detach(), cdt);
    const Tensor g = cast(grad.detach(), cdt);
    Tensor b[kMaxBuffers];
    for (size_t k = 0; k < buffers_.size(); ++k) {
      if (!(need >> k & 1)) continue;
      LUCID_CHECK(st.buffers[k].defined(), Tr::kName, ": state '", buffers_[k], "' was not created");
      b[k] = cast(st.buffers[k], cdt);
    }
    std::vector<Tensor> feeds;
    for (const Tensor& s : scalars) feeds.push_back(cast(s, cdt));
    const auto s = scalars_from_vector<Scalars<Tensor>>(feeds);
    Tr::rule(p, g, b, s, f);
    assign_data(param, cast(p, dt));
    for (size_t k = 0; k < buffers_.size(); ++k)
      if (need >> k & 1) assign_data(st.buffers[k], cast(b[k], dt));
  }

  void advance(ParamState& st, const Hyper& h) const override {
    Tr::advance(st, h);
    st.fresh = 0;
  }

 private:
  std::vector<std::string> buffers_, scalar_state_;
};

}  // namespace lucid::optim
