#pragma once
// Engine optimizers: one EngineOptimizer per param group. It owns the state
// of its parameters (named buffers as lucid::Tensor, the step count and any
// per-parameter host scalars) and runs the group's update as one
// EngineUpdate primitive per parameter (update_primitive.h): eagerly through
// the device's kernel for it (on the CPU one fused multi-threaded pass over
// the parameter's memory applying the kind's rule, rules.h, with V = the
// compute type), and under a graph::Tracer recorded into the compiled step.
// A device without such a kernel gets the same rule as whole-tensor ops
// (V = Tensor): no layer here names a backend.
// A kind (sgd, adam, ...) is an Algorithm; each is implemented once from its
// traits (kinds_*.cpp) by AlgorithmImpl (algorithm_impl.h).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lucid/core/error.h"
#include "lucid/core/tensor.h"
#include "lucid/optim/hyper.h"

namespace lucid::optim {

// The most state buffers and host scalars one parameter's update has.
constexpr int kMaxEngineBuffers = 3;
constexpr size_t kMaxEngineScalars = 16;

// A compiled step binds the storage of the buffers it updates when it traces,
// but torch creates the state at the first step taken (a step the GradScaler
// skips creates nothing), from that step's hyper-parameters. So a trace only
// reserves buffers: a reserved buffer is allocated but not part of the state
// (state_entries() omits it; while `exists` is false every buffer is
// reserved); init_state() gives it its initial value in place when the state
// is created, and the first step applied makes it part of the state.
// torch's scalar state dtype: float64 when the default dtype is, else float32.
DType state_dtype();

struct ParamState {
  bool exists = false;          // torch would list the parameter in `state`
  double step = 0;              // completed steps
  std::vector<Tensor> buffers;  // one slot per buffer name; undefined while absent
  std::vector<double> scalars;  // per-parameter host scalars (NAdam's mu_product; ASGD's eta, mu)
  // The dtype torch holds `scalars` in: the state dtype when the state
  // starts; the parameter's (floating) dtype once loaded, as torch's
  // load_state_dict casts them. Their arithmetic rounds to it.
  DType scalar_dtype = state_dtype();
  uint32_t fresh = 0;           // bit k: buffer k was created for the step in progress
  uint32_t reserved = 0;        // bit k: buffer k is reserved, not yet part of an existing state
};

// A state entry by name, as state_dict()/load_state_dict() see it: buffers
// are tensors; "step" and the per-parameter scalars are one-element tensors.
using StateEntries = std::vector<std::pair<std::string, Tensor>>;

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual const char* name() const = 0;
  // InvalidArgument (torch's message) for a hyper-parameter torch rejects.
  virtual void validate(const Hyper& h) const = 0;
  virtual const std::vector<std::string>& buffer_names() const = 0;
  virtual const std::vector<std::string>& scalar_state_names() const = 0;
  virtual bool has_step() const = 0;  // "step" is part of the state (all but SGD)
  // "step" is saved as an integer (torch's SparseAdam keeps a Python int).
  virtual bool integer_step() const { return false; }
  // The rule is element-wise (rules.h): a compiled step records it as one
  // EngineUpdate node. Other rules (the compiled LBFGS) record their ops.
  virtual bool elementwise() const { return true; }
  // Buffers the group's flags need (bit k = buffer k), and those every state
  // of this kind has whatever the flags.
  virtual uint32_t needed_buffers(const Hyper& h) const = 0;
  virtual uint32_t required_buffers() const = 0;
  // The structural flags the rule branches on (maximize, amsgrad, momentum
  // != 0, ...) as bits: a compiled update is specific to them.
  virtual uint32_t flag_bits(const Hyper& h) const = 0;
  // What each flag bit means, in the user's terms ("amsgrad", "momentum != 0").
  virtual std::vector<const char*> flag_names() const = 0;
  // Creates the state the flags need that is missing (concrete tensors, even
  // under a tracer). `defaults` are the optimizer's constructor values.
  virtual void init_state(ParamState& st, const Tensor& param, const Hyper& group, const Hyper& defaults) const = 0;
  virtual std::vector<const char*> host_scalar_names() const = 0;
  // The rule's scalars for the next step, in host_scalar_names() order.
  virtual std::vector<double> host_scalars(const ParamState& st, const Hyper& h) const = 0;
  // The rule over elements [begin, end) of host memory, in place: what a
  // backend's EngineUpdate kernel runs, chunk by chunk (elementwise kinds).
  // `buffers` has one slot per buffer name (null where the flags need none);
  // `scalars` are host_scalars().
  virtual void update_elements(DType dtype, uint32_t flag_bits, int64_t begin, int64_t end, void* param,
                               const void* grad, void* const* buffers, const double* scalars) const {
    (void)dtype, (void)flag_bits, (void)begin, (void)end, (void)param, (void)grad, (void)buffers, (void)scalars;
    fail<Error>(name(), ": the rule is not element-wise");
  }
  // The same rule on whole tensors through ops (recorded under tracing): the
  // new param and buffers from the old ones, what an EngineUpdate node
  // decomposes into. `buffers` holds those the flags need, in buffer order,
  // as does the result after the param; `scalars` are one-element tensors
  // in host_scalar_names() order.
  virtual std::vector<Tensor> update_tensors(uint32_t flag_bits, const Tensor& param, const Tensor& grad,
                                             const std::vector<Tensor>& buffers,
                                             const std::vector<Tensor>& scalars) const {
    (void)flag_bits, (void)param, (void)grad, (void)buffers, (void)scalars;
    fail<Error>(name(), ": the rule is not element-wise");
  }
  // The rule through ops, in place on a parameter and its state; scalars are
  // one-element tensors.
  virtual void ops_update(const Tensor& param, const Tensor& grad, ParamState& st, const std::vector<Tensor>& scalars,
                          const Hyper& h) const = 0;
  // Host-side bookkeeping once a step is applied: step count, host scalars.
  virtual void advance(ParamState& st, const Hyper& h) const = 0;
};

// The engine for `kind` ("sgd", "adam", "adamw", "rmsprop", "adagrad",
// "adadelta", "adamax", "nadam", "radam", "asgd", "rprop", "sparse_adam",
// and "lbfgs_bb", the closure-less step of a compiled LBFGS); InvalidArgument
// for any other name.
const Algorithm& algorithm(const std::string& kind);
bool has_engine(const std::string& kind);
// Hyper-parameter validation for every optimizer kind, the engine kinds and
// the Python-level one ("lbfgs"). The one place these rules
// live: constructors, add_param_group and every step use it.
void validate(const std::string& kind, const Hyper& h);

class EngineOptimizer {
 public:
  // Validates `group`; params must be floating tensors.
  EngineOptimizer(const std::string& kind, std::vector<Tensor> params, const Hyper& group, const Hyper& defaults);

  const std::string& kind() const { return kind_; }
  const Algorithm& algorithm() const { return *algo_; }
  size_t num_params() const { return params_.size(); }
  const Tensor& param(size_t i) const;
  // Follows an edit of the group's parameter list, as torch reads the list
  // on every step: a parameter still listed keeps its state, a new one
  // starts without. Returns false (changing nothing) when the list is the same.
  bool set_params(const std::vector<Tensor>& params);

  // Validates the hyper-parameters and every gradient; changes nothing.
  void check(const Hyper& h) const;
  // check(), then updates every parameter that has a gradient (a parameter
  // whose grad is None is skipped: no state, no step).
  void step(const Hyper& h);

  // Creates the state parameter i's next step needs, from `h`: a state that
  // does not exist starts from its initial values, as do its reserved
  // buffers (their storage is kept). The eager step calls it; Adagrad does
  // at construction.
  void init_state(size_t i, const Hyper& h);
  // What a compiled step calls when it traces, and before each run of an
  // update whose state is yet to be created (has_reservation()):
  // init_state() without creating anything visible. The buffers it adds
  // (all of them while the state does not exist) stay reserved until
  // advance().
  void reserve_state(size_t i, const Hyper& h);
  bool has_reservation(size_t i) const { return !state(i).exists || state(i).reserved != 0; }
  bool has_state(size_t i) const { return state(i).exists; }
  const ParamState& state(size_t i) const;
  // The state as named entries in torch's key order (step as float32).
  StateEntries state_entries(size_t i) const;
  // Loading: check_state() validates names, shapes and dtypes without
  // changing anything; set_state() replaces the state (copying into the
  // existing buffers, so their storage stays the same; a buffer the entries
  // lack stays allocated, reserved); empty = no state.
  void check_state(size_t i, const StateEntries& entries) const;
  void set_state(size_t i, const StateEntries& entries);

  // The ops path (what the compiled step emits), in three parts.
  std::vector<std::string> host_scalar_names() const;
  std::vector<double> host_scalars(size_t i, const Hyper& h) const;
  void update_with_ops(size_t i, const Tensor& param, const Tensor& grad, const std::vector<Tensor>& scalars,
                       const Hyper& h);
  // The bookkeeping of a step applied to parameter i: its count and host
  // scalars; a state created for the step, and its reserved buffers, now exist.
  void advance(size_t i, const Hyper& h);

 private:
  ParamState& state_mut(size_t i);
  // Parameter i's eager update: the device's EngineUpdate kernel, or the ops.
  void apply(size_t i, const Hyper& h);
  std::string kind_;
  const Algorithm* algo_;
  std::vector<Tensor> params_;
  std::vector<ParamState> states_;
  Hyper defaults_;
};

// Per-parameter scalars (mu_product, eta, mu) rounded to the dtype torch
// holds them in (ParamState::scalar_dtype).
double round_to(DType dtype, double v);

}  // namespace lucid::optim
