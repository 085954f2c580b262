#pragma once
// One table per optimizer kind: what the Python classes (lucid.optim) and the
// C++ API (api/optimizer.h) both read, so each fact is written once here —
// the constructor defaults in torch's order, the keys a loaded or added group
// gets when it lacks them (torch's __setstate__), the values every group is
// forced to, whether the state exists from construction (torch's Adagrad),
// and the engine that validates and runs the kind (engine.h: its Algorithm
// holds the validation, the state layout and the update rule).
#include <string>
#include <vector>

namespace lucid::optim {

// A hyper-parameter value as torch's constructors write it: None, a bool, an
// int, a float, or a tuple of numbers.
struct Default {
  enum class Type { None, Bool, Int, Float, Tuple };
  std::string key;
  Type type = Type::None;
  std::vector<double> values;   // one for Bool/Int/Float, several for Tuple
  std::vector<bool> integral;   // per value: written as an int
};

struct KindInfo {
  std::string name;                    // "adam", as lucid.optim.Adam._kind
  std::string engine;                  // the engine kind (engine.h), empty when none (lbfgs)
  std::vector<Default> defaults;       // torch's constructor defaults, in its order
  std::vector<Default> loaded;         // set on a loaded or added group that lacks them
  std::vector<Default> forced;         // every group has these values, whatever it says
  bool state_at_construction = false;  // the state of the constructor's parameters exists at once
};

// InvalidArgument naming the kinds for any other name.
const KindInfo& kind_info(const std::string& kind);
std::vector<std::string> kind_names();

}  // namespace lucid::optim
