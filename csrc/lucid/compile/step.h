#pragma once
// The compiled step: ONE object behind every compiled training step —
// Python's make_step, fused_step, train_step and compile_optimizer, and the
// C++ API's FusedStep and CompiledOptimizer. It owns the signature check,
// the executable cache, the scalar feeds, the step counts, the GradScaler's
// found_inf and scale update, and the cache-miss reports. A front end only
// reads its own objects into a Call (the arguments, the model's parameters,
// the optimizer's groups with this call's hyper-parameters) and, on a cache
// miss, runs the user's forward under the trace (the `Forward` callback).
//
// A call is prepare() (checks everything, compiles on a miss; may call the
// forward) then run() (the executable and the bookkeeping: parameters,
// optimizer state, step counts and the scaler change together, or not at
// all). run() touches no front-end object, so Python releases the GIL
// around it, and an interrupt cannot fall between an update and its count.
//
// Optimizer state appears as torch creates it: at the first step taken (a
// step the GradScaler skips creates none), from that step's
// hyper-parameters. A trace only reserves the buffers the executable binds
// (optim::ParamState), and prepare() re-initialises a reservation in place
// before each run until a step is applied.
//
// Calls of one step run one at a time (a recursive mutex held by every
// public member): each call reads what the previous one wrote (parameters,
// optimizer state, step counts, .grad, the cache), so overlapping calls from
// several threads would read the same step count, trace concurrently and
// lose .grad sums. A front end that calls prepare() and run() apart, or reads
// its objects for the Call, holds lock() across all of it. Separate steps
// still run in parallel; two steps (or a step and an eager optimizer.step())
// over one optimizer are not serialised against each other.
//
// What a trace depends on is the signature: the arguments' shapes, dtypes
// and devices; the parameters (identity, requires_grad, shape, dtype); for
// make_step whether each parameter already has a .grad; the optimizer's
// groups (their parameters, the structural flags of each rule, the identity
// of the state buffers); scaler on/off; the autocast state; and the front
// end's facts (e.g. model.training). A trace records the path Python took
// (like torch.jit.trace): data-dependent branches are baked in.
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lucid/compile/grad_scaler.h"
#include "lucid/core/autocast.h"
#include "lucid/core/tensor.h"
#include "lucid/graph/executable.h"
#include "lucid/optim/engine.h"

namespace lucid::compile {

// What the executable does after the traced forward.
enum class StepMode {
  Gradients,        // make_step: loss + backward; gradients land in .grad as backward() leaves them
  Update,           // fused_step / train_step: + unscaling, clipping and the optimizer update
  OptimizerUpdate,  // compile_optimizer: the update alone, the gradients being the inputs
  Forward,          // lucid.compile: the forward alone, every output returned (no backward)
};

struct StepConfig {
  StepMode mode = StepMode::Update;
  size_t cache_size = 8;
  // Update: clip the gradients (after unscaling) by their total norm and/or
  // clamp them by value, inside the executable; the norm is returned.
  std::optional<double> clip_norm;
  double norm_type = 2.0;
  std::optional<double> clip_value;
  // Update: micro-batches per call; every argument carries them along dim 0,
  // the gradients of their losses / accumulate are summed before the update.
  int64_t accumulate = 1;
  // Names of the front end's facts in the signature (e.g. "model.training"),
  // for cache-miss reports; Call::facts holds their values.
  std::vector<std::string> fact_names;
};

// One optimizer param group as a call sees it.
struct Group {
  optim::EngineOptimizer* engine = nullptr;
  std::shared_ptr<const optim::Hyper> hyper;  // read for this call (validated by prepare()); shared, not copied
};

// What a front end reads for one call.
struct Call {
  std::vector<Tensor> args;           // the step's tensor arguments (unused by OptimizerUpdate)
  std::vector<Tensor> params;         // every parameter the forward may use (Gradients, Update)
  std::vector<Group> groups;          // the optimizer's groups (Update, OptimizerUpdate)
  GradScalerState* scaler = nullptr;  // an enabled GradScaler (Update)
  std::vector<int64_t> facts;         // values of StepConfig::fact_names (booleans as 0/1)
};

// Runs the user's forward on symbolic arguments (one micro-batch) under the
// trace and returns the loss (a scalar) followed by any extra outputs (for
// StepMode::Forward: the outputs, whatever they are).
using Forward = std::function<std::vector<Tensor>(const std::vector<Tensor>& args)>;

struct CacheInfo {
  uint64_t hits = 0;
  uint64_t misses = 0;
  size_t entries = 0;
  double compile_seconds = 0;
  std::string last_miss;  // why the last compile happened, in the user's terms
};

class CompiledStep {
 public:
  CompiledStep(StepConfig config, Forward forward);
  ~CompiledStep();
  CompiledStep(const CompiledStep&) = delete;
  CompiledStep& operator=(const CompiledStep&) = delete;

  struct Entry;
  // A call checked and ready to run.
  struct Prepared {
    std::shared_ptr<Entry> entry;
    std::vector<Tensor> inputs;  // the executable's arguments
    std::vector<Tensor> bound;   // buffers bound per call (make_step's existing gradients)
    std::vector<double> scalars;
    std::vector<Group> groups;
    GradScalerState* scaler = nullptr;
    std::vector<Tensor> params;
  };

  // Validates the call and finds its executable, tracing and compiling it on
  // a miss (which calls the forward). Throws, changing nothing, on bad input.
  // Returns nothing for an OptimizerUpdate call with no gradient at all.
  std::optional<Prepared> prepare(Call call);
  // Runs the executable and the bookkeeping after it (new .grad tensors,
  // step counts, the scaler's update). Returns the results: the loss, the
  // extra outputs, then the total gradient norm when clipping by norm.
  std::vector<Tensor> run(Prepared& prepared);
  std::vector<Tensor> operator()(Call call);
  // Holds this step's calls off until released (see the header comment).
  // Python takes it with the GIL released: the holder may need the GIL.
  std::unique_lock<std::recursive_mutex> lock() const { return std::unique_lock(mutex_); }
  std::recursive_mutex& mutex() const { return mutex_; }

  const StepConfig& config() const { return config_; }
  CacheInfo cache_info() const;
  size_t cache_size() const { return config_.cache_size; }
  void set_cache_size(size_t n);
  void clear_cache();
  // One readable line per cached signature, most recent first.
  std::vector<std::string> cached_signatures() const;
  // The executables in the cache, most recent first (profiling, dumps).
  std::vector<std::shared_ptr<graph::Executable>> executables() const;

  // Signature of one call (public for the cache-miss reports' tests).
  struct Signature;

  // While set, every compiled step hands its traced graphs to `compiler`
  // instead of the device's (how tests run a backend's lowering, e.g. the
  // Metal plans, on the host); an empty function restores the devices'.
  static void compile_steps_with(graph::CompileFn compiler);

 private:
  void signature_of(const Call& call, Signature& out) const;
  bool matches(const Signature& sig, const Call& call) const;
  std::shared_ptr<Entry> find(const Call& call);
  std::shared_ptr<Entry> compile(const Call& call);
  void trace_update(const Call& call, Entry& entry);
  void trace_optimizer(const Call& call, Entry& entry);
  void trace_forward(const Call& call, Entry& entry);

  mutable std::recursive_mutex mutex_;
  StepConfig config_;
  Forward forward_;
  std::list<std::shared_ptr<Entry>> cache_;  // most recent first
  std::unique_ptr<Signature> scratch_;
  std::shared_ptr<Entry> last_entry_;  // the entry of the last call (what a miss is compared with)
  uint64_t hits_ = 0, misses_ = 0;
  double compile_seconds_ = 0;
  std::string last_miss_;
};

}  // namespace lucid::compile
