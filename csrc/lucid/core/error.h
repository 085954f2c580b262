#pragma once
// Error kinds of the core. Each maps to one Python exception type in the
// bindings (InvalidArgument -> lucid.InvalidArgument, a ValueError, ...), and
// the message is the same on both sides of the boundary.
#include <sstream>
#include <stdexcept>
#include <string>

namespace lucid {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A bad value: wrong shape, bad hyper-parameter, out-of-range argument.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};
// A value of the wrong kind: wrong dtype, wrong device, unsupported type.
class TypeError : public Error {
 public:
  using Error::Error;
};
class IndexError : public Error {
 public:
  using Error::Error;
};
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

// A device could not allocate: torch.OutOfMemoryError (a RuntimeError, what
// PyTorch's CPU allocator raises too), and in Python also a MemoryError.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A matrix that a decomposition or solver cannot handle (singular, not
// positive-definite): PyTorch's torch.linalg.LinAlgError.
class LinAlgError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

template <class E = InvalidArgument, class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw E(detail::concat(args...));
}

}  // namespace lucid

#define LUCID_CHECK(cond, ...)                      \
  do {                                              \
    if (!(cond)) ::lucid::fail<>(__VA_ARGS__);      \
  } while (0)
#define LUCID_CHECK_T(E, cond, ...)                 \
  do {                                              \
    if (!(cond)) ::lucid::fail<E>(__VA_ARGS__);     \
  } while (0)
