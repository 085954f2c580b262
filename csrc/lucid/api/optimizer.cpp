#include "lucid/api/optimizer.h"

#include <unordered_set>

#include "lucid/core/error.h"

namespace lucid::optim {

double OptionValue::number(size_t index) const {
  LUCID_CHECK(index < values.size(), "option has ", values.size(), " values, index ", index, " is out of range");
  return values[index];
}

const Options& default_options(const std::string& kind) {
  // torch.optim's signatures (torch 2.x), as lucid.optim's constructors have them.
  static const std::map<std::string, Options> table = {
      {"sgd", {{"lr", 1e-3}, {"momentum", 0}, {"dampening", 0}, {"weight_decay", 0}, {"nesterov", false},
               {"maximize", false}, {"differentiable", false}}},
      {"adam", {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0}, {"amsgrad", false},
                {"maximize", false}, {"capturable", false}, {"differentiable", false},
                {"decoupled_weight_decay", false}}},
      {"adamw", {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 1e-2}, {"amsgrad", false},
                 {"maximize", false}, {"capturable", false}, {"differentiable", false},
                 {"decoupled_weight_decay", true}}},
      {"rmsprop", {{"lr", 1e-2}, {"momentum", 0}, {"alpha", 0.99}, {"eps", 1e-8}, {"centered", false},
                   {"weight_decay", 0}, {"capturable", false}, {"maximize", false}, {"differentiable", false}}},
      {"adagrad", {{"lr", 1e-2}, {"lr_decay", 0}, {"eps", 1e-10}, {"weight_decay", 0},
                   {"initial_accumulator_value", 0}, {"maximize", false}, {"differentiable", false}}},
      {"adadelta", {{"lr", 1.0}, {"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 0}, {"maximize", false},
                    {"capturable", false}, {"differentiable", false}}},
      {"adamax", {{"lr", 2e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0}, {"maximize", false},
                  {"differentiable", false}, {"capturable", false}}},
      {"nadam", {{"lr", 2e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0},
                 {"momentum_decay", 4e-3}, {"decoupled_weight_decay", false}, {"maximize", false},
                 {"capturable", false}, {"differentiable", false}}},
      {"radam", {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0}, {"maximize", false},
                 {"capturable", false}, {"decoupled_weight_decay", false}, {"differentiable", false}}},
      {"asgd", {{"lr", 1e-2}, {"lambd", 1e-4}, {"alpha", 0.75}, {"t0", 1e6}, {"weight_decay", 0},
                {"maximize", false}, {"differentiable", false}, {"capturable", false}}},
      {"rprop", {{"lr", 1e-2}, {"etas", {0.5, 1.2}}, {"step_sizes", {1e-6, 50}}, {"maximize", false},
                 {"differentiable", false}, {"capturable", false}}},
  };
  auto it = table.find(kind);
  if (it == table.end()) fail("no engine optimizer named '", kind, "'");
  return it->second;
}

Hyper to_hyper(const Options& options) {
  Hyper h;
  for (const auto& [key, v] : options) h.set(key, v.values, v.integral);
  return h;
}

Optimizer::Optimizer(const std::string& kind, std::vector<Tensor> params, const Options& options)
    : Optimizer(kind, std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}

Optimizer::Optimizer(const std::string& kind, std::vector<ParamGroup> groups, const Options& options)
    : kind_(kind), defaults_(default_options(kind)) {
  for (const auto& [key, v] : options) defaults_.insert_or_assign(key, v);
  validate(kind_, to_hyper(defaults_));  // the constructor's own values, as torch checks them
  LUCID_CHECK(!groups.empty(), "optimizer got an empty parameter list");
  constructing_ = true;
  for (auto& g : groups) add_param_group(std::move(g));
  constructing_ = false;
}

void Optimizer::add_param_group(ParamGroup group) {
  LUCID_CHECK(!group.params.empty(), "optimizer got an empty parameter list");
  for (const auto& [key, v] : defaults_) group.options.emplace(key, v);
  std::unordered_set<const TensorImpl*> existing;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) existing.insert(p.impl());
  for (const Tensor& p : group.params) {
    LUCID_CHECK_T(TypeError, p.defined(), "optimizer can only optimize Tensors, but one of the params is undefined");
    LUCID_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
    LUCID_CHECK(!existing.count(p.impl()), "some parameters appear in more than one parameter group");
  }
  const Hyper h = to_hyper(group.options);
  auto engine = std::make_unique<EngineOptimizer>(kind_, group.params, h, to_hyper(defaults_));
  // torch's Adagrad creates its state when it is constructed.
  if (kind_ == "adagrad" && constructing_)
    for (size_t i = 0; i < engine->num_params(); ++i) engine->init_state(i, h);
  groups_.push_back(std::move(group));
  engines_.push_back(std::move(engine));
}

ParamGroup& Optimizer::param_group(size_t g) {
  if (g >= groups_.size()) fail<IndexError>("param group ", g, " out of range for ", groups_.size(), " groups");
  return groups_[g];
}
const ParamGroup& Optimizer::param_group(size_t g) const { return const_cast<Optimizer*>(this)->param_group(g); }

std::vector<Tensor> Optimizer::params() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

double Optimizer::lr(size_t g) const {
  const Options& o = param_group(g).options;
  auto it = o.find("lr");
  LUCID_CHECK(it != o.end(), "param group has no value for the hyper-parameter 'lr'");
  return it->second.number();
}

void Optimizer::set_lr(double lr) {
  for (auto& g : groups_) g.options.insert_or_assign("lr", OptionValue(lr));
}

EngineOptimizer& Optimizer::engine(size_t g) {
  param_group(g);
  return *engines_[g];
}
const EngineOptimizer& Optimizer::engine(size_t g) const { return const_cast<Optimizer*>(this)->engine(g); }

Hyper Optimizer::hyper(size_t g) const {
  const ParamGroup& group = param_group(g);
  const EngineOptimizer& e = *engines_[g];
  bool same = group.params.size() == e.num_params();
  for (size_t i = 0; same && i < group.params.size(); ++i) same = group.params[i].same(e.param(i));
  if (!same)
    fail<Error>("param_groups[", g, "]['params'] changed after the group was added; "
                "use add_param_group to optimize more parameters");
  return to_hyper(group.options);
}

void Optimizer::step() {
  std::vector<Hyper> hs;
  for (size_t g = 0; g < groups_.size(); ++g) {  // everything is validated before anything changes
    hs.push_back(hyper(g));
    engines_[g]->check(hs.back());
  }
  for (size_t g = 0; g < groups_.size(); ++g) engines_[g]->step(hs[g]);
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (Tensor& p : g.params) p.set_grad(Tensor());
}

}  // namespace lucid::optim
