#include "lucid/optim/hyper.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lucid/core/error.h"

namespace lucid::optim {

void Hyper::set(const std::string& key, std::vector<double> values, std::vector<bool> integral) {
  integral.resize(values.size(), false);
  entries_[key] = Entry{std::move(values), std::move(integral), {}};
}

void Hyper::set_unreadable(const std::string& key, const std::string& type_name) {
  entries_[key] = Entry{{}, {}, type_name};
}

bool Hyper::has(const std::string& key) const { return entries_.count(key) != 0; }

const Hyper::Entry& Hyper::entry(const std::string& key, size_t index) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) fail("param group has no value for the hyper-parameter '", key, "'");
  const Entry& e = it->second;
  if (!e.unreadable.empty())
    fail<TypeError>("hyper-parameter '", key, "' must be a number, got ", e.unreadable);
  if (index >= e.values.size()) {
    if (e.values.size() == 1 && index > 0)
      fail("hyper-parameter '", key, "' must be a pair of numbers, got a single number");
    fail("hyper-parameter '", key, "' must have at least ", index + 1, " values, got ", e.values.size());
  }
  return e;
}

double Hyper::num(const std::string& key, size_t index) const { return entry(key, index).values[index]; }

bool Hyper::flag(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.values.empty()) return false;
  return it->second.values[0] != 0;
}

std::string Hyper::repr(const std::string& key, size_t index) const {
  const Entry& e = entry(key, index);
  const double v = e.values[index];
  if (e.integral[index] && std::isfinite(v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  return py_float_repr(v);
}

std::vector<std::string> Hyper::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  // Shortest digit string that reads back as x.
  char buf[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  // buf is "[-]d.ddde[+-]XX": split into sign, digits, exponent.
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t epos = s.find('e');
  const int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {  // Python's repr switches to exponent form outside this range
    if (exp10 < 0) {
      out = "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else if (size_t(exp10 + 1) >= digits.size()) {
      out = digits + std::string(size_t(exp10 + 1) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp10 + 1)) + "." + digits.substr(size_t(exp10 + 1));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[8];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += e;
  }
  return neg ? "-" + out : out;
}

}  // namespace lucid::optim
