#pragma once
// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"): a counter-based generator, so element i of a draw is a pure function
// of (seed, offset + i) and any backend, thread split or compiled step
// reproduces the same numbers.
#include <cmath>
#include <cstdint>

namespace lucid::philox {

struct Block {
  uint32_t v[4];
};

// `block` fills the counter's upper words: the plain draws use block 0, an
// ElementStream counts through the blocks of its own counter.
inline Block philox4x32(uint64_t counter, uint64_t seed, uint64_t block = 0) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = uint32_t(block), c3 = uint32_t(block >> 32);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits (exactly representable in float32).
inline float to_uniform(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double to_uniform_double(uint32_t hi, uint32_t lo) {
  return double((uint64_t(hi) << 21) ^ (lo >> 11)) * (1.0 / 9007199254740992.0);
}

// Element i of a uniform draw keyed by (seed, offset).
inline float uniform_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return to_uniform(philox4x32(offset + i / 4, seed).v[i % 4]);
}

// Element i of a standard normal draw (Box-Muller on one block per pair).
inline float normal_at(uint64_t seed, uint64_t offset, uint64_t i) {
  const Block b = philox4x32(offset + i / 2, seed);
  const uint32_t* u = b.v + 2 * (i % 2);
  const double u1 = (double(u[0]) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  const double u2 = double(u[1]) * (1.0 / 4294967296.0);
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

// An unbounded stream of draws that belongs to one counter (one element of
// a draw whose element needs as many numbers as a rejection loop takes):
// block j of the stream is philox4x32(counter, seed, j), so each element's
// numbers are a pure function of (seed, counter) whatever the thread split.
class ElementStream {
 public:
  ElementStream(uint64_t seed, uint64_t counter) : seed_(seed), counter_(counter) {}

  // Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const uint32_t hi = word(), lo = word();
    return to_uniform_double(hi, lo);
  }
  // Standard normal (Box-Muller; the second value of each pair is kept).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint32_t word() {
    if (used_ == 4) {
      block_ = philox4x32(counter_, seed_, next_block_++);
      used_ = 0;
    }
    return block_.v[used_++];
  }

  uint64_t seed_, counter_, next_block_ = 0;
  Block block_{};
  int used_ = 4;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace lucid::philox
