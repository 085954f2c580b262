#include "lucid/optim/kind_table.h"

#include <map>

#include "lucid/core/error.h"

namespace lucid::optim {

namespace {

Default none(const char* key) { return {key, Default::Type::None, {}, {}}; }
Default flag(const char* key, bool v) { return {key, Default::Type::Bool, {v ? 1.0 : 0.0}, {true}}; }
Default integer(const char* key, int64_t v) { return {key, Default::Type::Int, {double(v)}, {true}}; }
Default real(const char* key, double v) { return {key, Default::Type::Float, {v}, {false}}; }
Default pair(const char* key, double a, double b, bool b_integral = false) {
  return {key, Default::Type::Tuple, {a, b}, {false, b_integral}};
}

// The keys torch's __setstate__ fills with setdefault, per kind.
std::vector<Default> flags_loaded(std::vector<Default> extra = {}) {
  std::vector<Default> out = {none("foreach"), flag("maximize", false), flag("differentiable", false),
                              flag("capturable", false)};
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::map<std::string, KindInfo> build() {
  std::map<std::string, KindInfo> t;
  auto add = [&](KindInfo k) { t.emplace(k.name, std::move(k)); };
  const auto betas = pair("betas", 0.9, 0.999);
  add({"sgd", "sgd",
       {real("lr", 1e-3), integer("momentum", 0), integer("dampening", 0), integer("weight_decay", 0),
        flag("nesterov", false), flag("maximize", false), none("foreach"), flag("differentiable", false),
        none("fused")},
       {flag("nesterov", false), flag("maximize", false), none("foreach"), flag("differentiable", false),
        flag("fused", false)},
       {}});
  const std::vector<Default> adam_loaded = {flag("amsgrad", false), flag("maximize", false), none("foreach"),
                                            flag("capturable", false), flag("differentiable", false),
                                            flag("decoupled_weight_decay", false), none("fused")};
  auto adam_defaults = [&](Default weight_decay, bool decoupled) {
    return std::vector<Default>{real("lr", 1e-3), betas, real("eps", 1e-8), weight_decay, flag("amsgrad", false),
                                flag("maximize", false), none("foreach"), flag("capturable", false),
                                flag("differentiable", false), none("fused"),
                                flag("decoupled_weight_decay", decoupled)};
  };
  add({"adam", "adam", adam_defaults(integer("weight_decay", 0), false), adam_loaded, {}});
  add({"adamw", "adam", adam_defaults(real("weight_decay", 1e-2), true), adam_loaded,
       {flag("decoupled_weight_decay", true)}});
  add({"adamax", "adamax",
       {real("lr", 2e-3), betas, real("eps", 1e-8), integer("weight_decay", 0), none("foreach"),
        flag("maximize", false), flag("differentiable", false), flag("capturable", false)},
       flags_loaded(), {}});
  add({"nadam", "nadam",
       {real("lr", 2e-3), betas, real("eps", 1e-8), integer("weight_decay", 0), real("momentum_decay", 4e-3),
        flag("decoupled_weight_decay", false), flag("maximize", false), none("foreach"), flag("capturable", false),
        flag("differentiable", false)},
       flags_loaded({flag("decoupled_weight_decay", false)}), {}});
  add({"radam", "radam",
       {real("lr", 1e-3), betas, real("eps", 1e-8), integer("weight_decay", 0), flag("maximize", false),
        none("foreach"), flag("capturable", false), flag("decoupled_weight_decay", false),
        flag("differentiable", false)},
       flags_loaded({flag("decoupled_weight_decay", false)}), {}});
  add({"sparse_adam", "sparse_adam", {real("lr", 1e-3), betas, real("eps", 1e-8), flag("maximize", false)}, {}, {}});
  add({"rmsprop", "rmsprop",
       {real("lr", 1e-2), integer("momentum", 0), real("alpha", 0.99), real("eps", 1e-8), flag("centered", false),
        integer("weight_decay", 0), flag("capturable", false), none("foreach"), flag("maximize", false),
        flag("differentiable", false)},
       flags_loaded({integer("momentum", 0), flag("centered", false)}), {}});
  add({"adagrad", "adagrad",
       {real("lr", 1e-2), integer("lr_decay", 0), real("eps", 1e-10), integer("weight_decay", 0),
        integer("initial_accumulator_value", 0), none("foreach"), flag("maximize", false),
        flag("differentiable", false), none("fused")},
       {none("foreach"), flag("maximize", false), flag("differentiable", false), none("fused")},
       {},
       true});
  add({"adadelta", "adadelta",
       {real("lr", 1.0), real("rho", 0.9), real("eps", 1e-6), integer("weight_decay", 0), flag("maximize", false),
        flag("capturable", false), none("foreach"), flag("differentiable", false)},
       flags_loaded(), {}});
  add({"asgd", "asgd",
       {real("lr", 1e-2), real("lambd", 1e-4), real("alpha", 0.75), real("t0", 1e6), integer("weight_decay", 0),
        none("foreach"), flag("maximize", false), flag("differentiable", false), flag("capturable", false)},
       flags_loaded(), {}});
  add({"rprop", "rprop",
       {real("lr", 1e-2), pair("etas", 0.5, 1.2), pair("step_sizes", 1e-6, 50, true), none("foreach"),
        flag("maximize", false), flag("differentiable", false), flag("capturable", false)},
       flags_loaded(), {}});
  add({"lbfgs", "",
       {integer("lr", 1), integer("max_iter", 20), none("max_eval"), real("tolerance_grad", 1e-7),
        real("tolerance_change", 1e-9), integer("history_size", 100), none("line_search_fn")},
       {}, {}});
  return t;
}

const std::map<std::string, KindInfo>& table() {
  static const std::map<std::string, KindInfo> t = build();
  return t;
}

}  // namespace

const KindInfo& kind_info(const std::string& kind) {
  auto it = table().find(kind);
  if (it == table().end()) {
    std::string names;
    for (const auto& [n, _] : table()) names += (names.empty() ? "" : ", ") + n;
    fail("no optimizer kind named '", kind, "' (kinds: ", names, ")");
  }
  return it->second;
}

std::vector<std::string> kind_names() {
  std::vector<std::string> out;
  for (const auto& [n, _] : table()) out.push_back(n);
  return out;
}

}  // namespace lucid::optim
