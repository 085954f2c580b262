#pragma once
// Shared helpers of the C++ tests.
#include <doctest/doctest.h>
#include <lucid/lucid.h>

#include <cmath>
#include <string>
#include <vector>

namespace lucid_test {

inline std::vector<double> values(const lucid::Tensor& t) { return lucid::to_vector<double>(t); }

// assert_allclose(a, b, rtol, atol) over two tensors' values.
inline void check_close(const lucid::Tensor& a, const lucid::Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(a.shape() == b.shape());
  const auto x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element ", i, ": ", x[i], " vs ", y[i]);
    CHECK(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]));
  }
}

inline void check_equal(const lucid::Tensor& a, const lucid::Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  CHECK(values(a) == values(b));
}

// The message of the exception of type E that `fn` throws ("" if none).
template <class E, class F>
std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace lucid_test
