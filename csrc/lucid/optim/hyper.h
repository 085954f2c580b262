#pragma once
// Hyper-parameters of one param group, as read from the group's dict on every
// step: each key holds one number (lr, eps, a flag as 0/1) or a few (betas).
#include <map>
#include <string>
#include <vector>

namespace lucid::optim {

class Hyper {
 public:
  // `integral` marks values written as integers by the user, so error
  // messages print them the way Python does ("-1", not "-1.0").
  void set(const std::string& key, std::vector<double> values, std::vector<bool> integral = {});
  // A key whose value is not a number; an error only if an optimizer reads it.
  void set_unreadable(const std::string& key, const std::string& type_name);

  bool has(const std::string& key) const;
  // The index-th number of `key` (InvalidArgument naming the key when it is
  // absent, not a number, or too short).
  double num(const std::string& key, size_t index = 0) const;
  // A structural switch: absent means false.
  bool flag(const std::string& key) const;
  // The value as Python prints it, for error messages.
  std::string repr(const std::string& key, size_t index = 0) const;

  std::vector<std::string> keys() const;

 private:
  struct Entry {
    std::vector<double> values;
    std::vector<bool> integral;
    std::string unreadable;  // type name when the value is not a number
  };
  const Entry& entry(const std::string& key, size_t index) const;
  std::map<std::string, Entry> entries_;
};

// `x` as Python's repr() prints a float: shortest round-trip digits, "1.0",
// "1e-08", "inf".
std::string py_float_repr(double x);

}  // namespace lucid::optim
