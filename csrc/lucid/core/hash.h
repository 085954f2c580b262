#pragma once
// Hash combining, for the hash_value() of value types (Layout, TensorMeta...)
// and the attribute hashes of primitives (ops/primitive.h).
#include <cstddef>
#include <functional>
#include <type_traits>

namespace lucid {

inline size_t hash_mix(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }
template <class Seq>
size_t hash_seq(size_t seed, const Seq& s) {
  for (const auto& x : s) seed = hash_mix(seed, std::hash<std::decay_t<decltype(x)>>()(x));
  return seed;
}

}  // namespace lucid
