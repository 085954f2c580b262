#include "lucid/api/optimizer.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "lucid/api/data.h"
#include "lucid/core/error.h"
#include "lucid/ops/ops.h"
#include "lucid/optim/kind_table.h"

namespace lucid::optim {

double OptionValue::number(size_t index) const {
  LUCID_CHECK(index < values.size(), "option has ", values.size(), " values, index ", index, " is out of range");
  return values[index];
}

namespace {

// A value of the kind table as an option; nothing for None.
std::optional<OptionValue> option_of(const Default& d) {
  switch (d.type) {
    case Default::Type::None: return std::nullopt;
    case Default::Type::Bool: return OptionValue(d.values[0] != 0);
    case Default::Type::Int: return OptionValue(int64_t(d.values[0]));
    case Default::Type::Float: return OptionValue(d.values[0]);
    case Default::Type::Tuple: {
      OptionValue v;
      v.values = d.values;
      v.integral = d.integral;
      return v;
    }
  }
  return std::nullopt;
}

Options options_of(const std::vector<Default>& ds) {
  Options out;
  for (const Default& d : ds)
    if (auto v = option_of(d)) out.emplace(d.key, *v);
  return out;
}

}  // namespace

const Options& default_options(const std::string& kind) {
  // The kind table (optim/kind_table.h) is what lucid.optim's constructors read too.
  static const std::map<std::string, Options> table = [] {
    std::map<std::string, Options> t;
    for (const std::string& k : kind_names())
      if (has_engine(k)) t.emplace(k, options_of(kind_info(k).defaults));
    return t;
  }();
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
  const KindInfo& info = kind_info(kind_);
  // The keys torch's __setstate__ adds, except those the constructor sets to
  // None (absent here, as in defaults_): SGD's fused stays None, not False.
  for (const auto& [key, v] : options_of(info.loaded)) {
    const bool constructor_none = std::any_of(info.defaults.begin(), info.defaults.end(), [&](const Default& d) {
      return d.key == key && d.type == Default::Type::None;
    });
    if (!constructor_none) group.options.emplace(key, v);
  }
  for (const auto& [key, v] : options_of(info.forced)) group.options.insert_or_assign(key, v);
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
  if (kind_info(kind_).state_at_construction && constructing_)
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
  engines_[g]->set_params(group.params);  // an edited parameter list is followed, as torch reads it each step
  return to_hyper(group.options);
}

Value OptionValue::to_value() const {
  const OptionValue& v = *this;
  auto one = [&](size_t k) -> Value {
    if (v.boolean) return Value(v.values[k] != 0);
    if (v.integral[k]) return Value(int64_t(v.values[k]));
    return Value(v.values[k]);
  };
  if (v.values.size() == 1) return one(0);
  std::vector<Value> out;
  for (size_t k = 0; k < v.values.size(); ++k) out.push_back(one(k));
  return Value::tuple(std::move(out));  // betas, etas, step_sizes: tuples, as in Python
}

std::optional<OptionValue> OptionValue::from_value(const Value& v) {
  using K = Value::Kind;
  OptionValue out;
  auto number = [&](const Value& x) {
    if (x.kind() == K::Bool) {
      out.values.push_back(x.boolean());
      out.integral.push_back(true);
      out.boolean = true;
    } else if (x.kind() == K::Int || x.kind() == K::Float) {
      out.values.push_back(x.number());
      out.integral.push_back(x.kind() == K::Int);
    } else if (x.kind() == K::Tensor && x.tensor().numel() == 1) {
      out.values.push_back(item(x.tensor()).to_double());
      out.integral.push_back(false);
    } else {
      return false;
    }
    return true;
  };
  if (v.kind() == K::List || v.kind() == K::Tuple) {
    for (const Value& x : v.elements())
      if (!number(x)) return std::nullopt;
    return out;
  }
  if (!number(v)) return std::nullopt;
  return out;
}

void Optimizer::step() {
  std::vector<Hyper> hs;
  for (size_t g = 0; g < groups_.size(); ++g) {  // everything is validated before anything changes
    hs.push_back(hyper(g));
    engines_[g]->check(hs.back());
  }
  for (size_t g = 0; g < groups_.size(); ++g) engines_[g]->step(hs[g]);
}

namespace {

Tensor state_tensor(const Value& v, const std::string& name) {
  if (v.kind() == Value::Kind::Tensor) return v.tensor();
  if (v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Float || v.kind() == Value::Kind::Bool)
    return scalar_tensor(v.number(), DType::Float32);
  fail<TypeError>("state entry '", name, "' is not an array or number: ", v.kind_name());
}

}  // namespace

Value Optimizer::state_dict() const {
  Value state = Value::dict(), groups = Value::list();
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    Value group = Value::dict();
    for (const auto& [key, v] : groups_[g].options) group.set(key, v.to_value());
    std::vector<Value> ids;
    for (size_t i = 0; i < groups_[g].params.size(); ++i, ++index) {
      ids.emplace_back(index);
      const StateEntries entries = engines_[g]->state_entries(i);
      if (entries.empty()) continue;
      Value st = Value::dict();
      for (const auto& [name, t] : entries) st.set(name, t);
      state.set(index, st);
    }
    group.set("params", Value::list(std::move(ids)));
    groups.elements().push_back(std::move(group));
  }
  return Value::dict({{"state", state}, {"param_groups", groups}});
}

void Optimizer::load_state_dict(const Value& sd) {
  if (sd.kind() != Value::Kind::Dict || !sd.find("param_groups") || !sd.find("state"))
    fail("state_dict must be a dict with 'state' and 'param_groups' entries");
  const Value& saved_groups = sd["param_groups"];
  if (saved_groups.elements().size() != groups_.size())
    fail("loaded state dict has a different number of parameter groups");
  std::vector<Options> options(groups_.size());
  std::vector<std::pair<Value, std::pair<size_t, size_t>>> where;  // saved id -> (group, index)
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Value& s = saved_groups[g];
    const Value* ids = s.find("params");
    if (!ids || ids->elements().size() != groups_[g].params.size())
      fail("loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    for (size_t i = 0; i < ids->elements().size(); ++i) where.push_back({(*ids)[i], {g, i}});
    std::unordered_set<std::string> saved_keys;  // None values included (absent from the options)
    for (const auto& [key, v] : s.items()) {
      if (key.kind() != Value::Kind::String || key.string() == "params" || key.string() == "param_names") continue;
      saved_keys.insert(key.string());
      if (auto o = OptionValue::from_value(v)) options[g][key.string()] = *o;
    }
    for (const auto& [key, v] : defaults_) options[g].emplace(key, v);
    // torch's __setstate__: only keys the saved group lacks (a saved None stays None)
    for (const auto& [key, v] : options_of(kind_info(kind_).loaded))
      if (!saved_keys.count(key)) options[g].emplace(key, v);
    for (const auto& [key, v] : options_of(kind_info(kind_).forced)) options[g].insert_or_assign(key, v);
    validate(kind_, to_hyper(options[g]));
  }
  const Value& saved_state = sd["state"];
  for (const auto& [key, entries] : saved_state.items()) {
    bool listed = false;
    for (const auto& w : where) listed = listed || w.first == key;
    if (!listed) fail("loaded state dict has state for parameter ", key.repr(), ", which no parameter group lists");
  }
  std::vector<std::pair<std::pair<size_t, size_t>, StateEntries>> per_param;
  for (const auto& [key, gi] : where) {
    StateEntries converted;
    if (const Value* entries = saved_state.find(key)) {
      if (entries->kind() != Value::Kind::Dict)
        fail<TypeError>("the state of a parameter must be a dict, got ", entries->kind_name());
      for (const auto& [name, v] : entries->items()) {
        const std::string n = name.kind() == Value::Kind::String ? name.string() : name.repr();
        converted.emplace_back(n, state_tensor(v, n));
      }
    }
    engines_[gi.first]->check_state(gi.second, converted);
    per_param.emplace_back(gi, std::move(converted));
  }
  // Everything checked: commit.
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = std::move(options[g]);
  for (auto& [gi, entries] : per_param) engines_[gi.first]->set_state(gi.second, entries);
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (Tensor& p : g.params) p.set_grad(Tensor());
}

}  // namespace lucid::optim
