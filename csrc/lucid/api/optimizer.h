#pragma once
// The engine optimizers as a native app uses them: torch.optim's kinds with
// their default options, param groups, step() and zero_grad(). Each group is
// one optim::EngineOptimizer (engine.h) updated with the group's options,
// read again on every step, so editing them between steps (an LR schedule)
// takes effect like editing Python's param_groups.
//
//   lucid::optim::Optimizer opt("adam", params, {{"lr", 1e-3}, {"betas", {0.9, 0.99}}});
//   loss = ...; lucid::autograd::backward(loss); opt.step(); opt.zero_grad();
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lucid/api/serialization.h"
#include "lucid/core/tensor.h"
#include "lucid/optim/engine.h"
#include "lucid/optim/hyper.h"

namespace lucid::optim {

// One option as a param group holds it: a number, a flag, or a few numbers
// (betas). Integers keep their kind so error messages print them as Python
// does ("-1", not "-1.0").
struct OptionValue {
  std::vector<double> values;
  std::vector<bool> integral;
  bool boolean = false;     // a flag (saved as Python's True/False)
  OptionValue() = default;  // no value (what map::operator[] inserts)
  OptionValue(double v) : values{v}, integral{false} {}                // NOLINT
  OptionValue(int v) : values{double(v)}, integral{true} {}            // NOLINT
  OptionValue(int64_t v) : values{double(v)}, integral{true} {}        // NOLINT
  OptionValue(bool v) : values{v ? 1.0 : 0.0}, integral{true}, boolean(true) {}  // NOLINT
  OptionValue(std::initializer_list<double> v) : values(v), integral(v.size(), false) {}  // NOLINT
  double number(size_t index = 0) const;  // InvalidArgument when absent
  // As a state_dict's param group holds it (a number, a bool, a tuple), and
  // back: nullopt for what is not a number or a sequence of numbers (None).
  Value to_value() const;
  static std::optional<OptionValue> from_value(const Value& v);
};

// Options by name ("lr", "betas", "momentum", "nesterov", ...), as in a
// Python param group (without "params").
using Options = std::map<std::string, OptionValue>;

// torch.optim's constructor defaults for an engine kind ("sgd", "adam",
// "adamw", "rmsprop", "adagrad", "adadelta", "adamax", "nadam", "radam",
// "asgd", "rprop", "sparse_adam"), read from the kind table
// (optim/kind_table.h) that lucid.optim's constructors read too. Options
// that are None in Python (foreach, fused) are absent. InvalidArgument for
// any other kind.
const Options& default_options(const std::string& kind);
Hyper to_hyper(const Options& options);

struct ParamGroup {
  std::vector<Tensor> params;
  Options options;  // overrides of the optimizer's defaults for this group
};

class Optimizer {
 public:
  // One group of `params`; `options` override default_options(kind) and
  // become this optimizer's defaults for later groups.
  Optimizer(const std::string& kind, std::vector<Tensor> params, const Options& options = {});
  Optimizer(const std::string& kind, std::vector<ParamGroup> groups, const Options& options = {});
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& kind() const { return kind_; }
  const Options& defaults() const { return defaults_; }

  // Validates the group (options, parameters not already optimized) before
  // adding it; missing options take this optimizer's defaults.
  void add_param_group(ParamGroup group);
  size_t num_groups() const { return groups_.size(); }
  // The group's parameters and options (complete: defaults filled in).
  // Edit either between steps: a parameter still listed keeps its state, a
  // new one starts without (torch's semantics).
  ParamGroup& param_group(size_t g);
  const ParamGroup& param_group(size_t g) const;
  std::vector<Tensor> params() const;  // every group's, in order

  // The learning rate of group g; set_lr() sets every group's.
  double lr(size_t g = 0) const;
  void set_lr(double lr);

  // Validates every group and gradient, then updates each parameter that
  // has a gradient (skipping the others: no state, no step).
  void step();
  // Resets every gradient (to an undefined tensor, like set_to_none=True).
  void zero_grad();

  // The engine of group g (state, state_entries/set_state) and the group's
  // options as the engine reads them (hyper() also makes the engine follow an
  // edited parameter list).
  EngineOptimizer& engine(size_t g);
  const EngineOptimizer& engine(size_t g) const;
  Hyper hyper(size_t g) const;

  // torch.optim's state_dict layout, as Python's Optimizer.state_dict() has
  // it: {"state": {index: {"step": t, "exp_avg": t, ...}}, "param_groups":
  // [{options..., "params": [indices]}]}, with tensors (sharing the live
  // state's memory). lucid.save / lucid.load carry it to Python, whose
  // load_state_dict() takes it, and back.
  Value state_dict() const;
  // Loads a state_dict (from state_dict() or Python's, with tensors or
  // numbers). Everything is validated (group and parameter counts, options,
  // state names, shapes and dtypes) before anything changes; errors carry
  // Python's messages.
  void load_state_dict(const Value& state_dict);

 private:
  std::string kind_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<std::unique_ptr<EngineOptimizer>> engines_;
  bool constructing_ = false;
};

}  // namespace lucid::optim
