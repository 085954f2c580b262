// CPU kernels of RandomParametric (Gamma, Poisson and Binomial draws) and
// ReparamGrad (the Gamma and Dirichlet reparameterisation gradients). The
// samplers and the approximations are PyTorch's (ATen/native/Distributions.h,
// after NumPy's and TensorFlow's samplers), computed in double; element i
// draws its numbers from philox::ElementStream(seed, offset + i), so the
// result is independent of the thread split.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lucid/backend/cpu/dispatch.h"
#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/core/philox.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

using philox::ElementStream;

// Rejection loops cost tens of ns per draw: smaller chunks than elementwise ops.
constexpr int64_t kDrawGrain = 512;

// The smallest positive normal number of T (gamma draws are clamped to it, as PyTorch's).
template <class T>
double smallest_normal() {
  if constexpr (std::is_same_v<T, Half>) return 6.103515625e-05;
  else if constexpr (std::is_same_v<T, BFloat16>) return 1.1754943508222875e-38;
  else return double(std::numeric_limits<T>::min());
}

// Marsaglia and Tsang (2000), with the alpha < 1 boost.
double sample_gamma(double alpha, ElementStream& s) {
  double scale = 1.0;
  if (alpha < 1.0) {
    if (alpha == 0.0) return 0.0;
    scale *= std::pow(1 - s.uniform(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, y;
    do {
      x = s.normal();
      y = 1.0 + c * x;
    } while (y <= 0);
    const double v = y * y * y;
    const double u = 1 - s.uniform();
    const double xx = x * x;
    if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
    if (std::log(u) < 0.5 * xx + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

// Transformed rejection (Hoermann 1993) for large rates, multiplication of
// uniforms below 10.
double sample_poisson(double lambda, ElementStream& s) {
  if (lambda >= 10) {
    const double slam = std::sqrt(lambda), loglam = std::log(lambda);
    const double b = 0.931 + 2.53 * slam;
    const double a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    const double vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
      const double U = s.uniform() - 0.5, V = s.uniform();
      const double us = 0.5 - std::fabs(U);
      const double k = std::floor((2 * a / us + b) * U + lambda + 0.43);
      if (us >= 0.07 && V <= vr) return k;
      if (k < 0 || (us < 0.013 && V > us)) continue;
      if (std::log(V) + std::log(invalpha) - std::log(a / (us * us) + b) <= -lambda + k * loglam - std::lgamma(k + 1))
        return k;
    }
  }
  if (lambda == 0) return 0;
  const double enlam = std::exp(-lambda);
  double x = 0, prod = 1.0;
  for (;;) {
    prod *= s.uniform();
    if (prod > enlam) x += 1;
    else return x;
  }
}

double stirling_approx_tail(double k) {
  static const double tail[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983, 0.02079067210376509,
                                0.0166446911898211,  0.0138761288230707,  0.0118967099458917, 0.0104112652619720,
                                0.00925546218271273, 0.00833056343336287};
  if (k < 10) return tail[size_t(k)];
  const double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

double binomial_inversion(double count, double prob, ElementStream& s) {
  const double logprob = std::log1p(-prob);
  double geom_sum = 0, num_geom = 0;
  for (;;) {
    geom_sum += std::ceil(std::log(s.uniform()) / logprob);
    if (geom_sum > count) return num_geom;
    num_geom += 1;
  }
}

// Hoermann's BTRS (as TensorFlow's, which PyTorch follows).
double btrs(double count, double prob, ElementStream& s) {
  const double stddev = std::sqrt(count * prob * (1 - prob));
  const double b = 1.15 + 2.53 * stddev;
  const double a = -0.0873 + 0.0248 * b + 0.01 * prob;
  const double c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double r = prob / (1 - prob);
  const double alpha = (2.83 + 5.1 / b) * stddev;
  const double m = std::floor((count + 1) * prob);
  for (;;) {
    const double U = s.uniform() - 0.5;
    double V = s.uniform();
    const double us = 0.5 - std::fabs(U);
    const double k = std::floor((2 * a / us + b) * U + c);
    if (k < 0 || k > count) continue;
    if (us >= 0.07 && V <= v_r) return k;
    V = std::log(V * alpha / (a / (us * us) + b));
    const double upperbound = (m + 0.5) * std::log((m + 1) / (r * (count - m + 1))) +
                              (count + 1) * std::log((count - m + 1) / (count - k + 1)) +
                              (k + 0.5) * std::log(r * (count - k + 1) / (k + 1)) + stirling_approx_tail(m) +
                              stirling_approx_tail(count - m) - stirling_approx_tail(k) -
                              stirling_approx_tail(count - k);
    if (V <= upperbound) return k;
  }
}

double sample_binomial(double count, double prob, ElementStream& s) {
  if (count <= 0.0 || prob <= 0.0) return 0;
  if (prob >= 1.0) return count;
  if (prob <= 0.5) return count * prob >= 10.0 ? btrs(count, prob, s) : binomial_inversion(count, prob, s);
  if (prob > 0.5) {
    const double q = 1.0 - prob;
    return count - (count * q >= 10.0 ? btrs(count, q, s) : binomial_inversion(count, q, s));
  }
  return std::numeric_limits<double>::quiet_NaN();  // prob is NaN
}

void random_parametric_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto dist = static_cast<const RandomParametric&>(p).dist;
  const int64_t* key = static_cast<const int64_t*>(in[0].data);
  const uint64_t seed = uint64_t(key[0]), offset = uint64_t(key[1]);
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, p.name().c_str(), [&] {
    const T* a = static_cast<const T*>(in[1].data);
    const T* b = in.size() > 2 ? static_cast<const T*>(in[2].data) : nullptr;
    T* o = static_cast<T*>(out[0].data);
    if (dist == ParametricDistribution::Poisson)
      for (int64_t i = 0; i < n; ++i)
        LUCID_CHECK(double(load(a, i)) >= 0, "invalid Poisson rate, expected rate to be non-negative");
    parallel_for(n, kDrawGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        ElementStream s(seed, offset + uint64_t(i));
        const double x = double(load(a, i));
        switch (dist) {
          case ParametricDistribution::Gamma: store(o, i, std::max(smallest_normal<T>(), sample_gamma(x, s))); break;
          case ParametricDistribution::Poisson: store(o, i, sample_poisson(x, s)); break;
          case ParametricDistribution::Binomial: store(o, i, sample_binomial(x, double(load(b, i)), s)); break;
        }
      }
    });
  });
}
LUCID_REGISTER_KERNEL(RandomParametric, CPU, random_parametric_kernel);

// ------------------------------------------------- reparameterisation grads
// S is the type PyTorch computes the scalar parts in (the operands' type),
// A its accumulation type (double).
using A = double;

A digamma_one(A x) { return digamma_(x); }

// -(d/dalpha cdf(x; alpha)) / pdf(x; alpha) for x ~ Gamma(alpha, 1).
// The branch thresholds are float literals, as PyTorch's (0.8f, not 0.8).
A standard_gamma_grad_one(A alpha, A x) {
  if (x < 0.8f) {  // Taylor series for small x
    A numer = 1, denom = alpha;
    A series1 = numer / denom, series2 = numer / (denom * denom);
    for (int i = 1; i <= 5; ++i) {
      numer *= -x / A(i);
      denom += 1;
      series1 += numer / denom;
      series2 += numer / (denom * denom);
    }
    const A pow_x_alpha = std::pow(x, alpha);
    const A gamma_pdf = std::pow(x, alpha - 1) * std::exp(-x);
    const A gamma_cdf = pow_x_alpha * series1;
    const A gamma_cdf_alpha = (std::log(x) - digamma_one(alpha)) * gamma_cdf - pow_x_alpha * series2;
    const A result = -gamma_cdf_alpha / gamma_pdf;
    return std::isnan(result) ? 0 : result;
  }
  if (alpha > 8.0f) {  // Rice saddle point expansion for large alpha
    if (0.9f * alpha <= x && x <= 1.1f * alpha) {
      const A numer_1 = 1 + 24 * alpha * (1 + 12 * alpha);
      const A numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x);
      const A denom = 1244160 * (alpha * alpha) * (alpha * alpha);
      return numer_1 * numer_2 / denom;
    }
    const A denom = std::sqrt(8 * alpha);
    const A term2 = denom / (alpha - x);
    const A term3 = std::pow(x - alpha - alpha * std::log(x / alpha), A(-1.5));
    const A term23 = x < alpha ? term2 - term3 : term2 + term3;
    const A term1 = std::log(x / alpha) * term23 - std::sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
    const A stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
    const A numer = x * term1;
    return -stirling * numer / denom;
  }
  // A bivariate rational approximation.
  const A u = std::log(x / alpha), v = std::log(alpha);
  static const A coef_uv[3][8] = {
      {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
      {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623},
      {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
       -1.5247877e-07},
  };
  A coef_v[8];
  for (int i = 0; i < 8; ++i) coef_v[i] = coef_uv[0][i] + u * (coef_uv[1][i] + u * coef_uv[2][i]);
  const A p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3]));
  const A q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7]));
  return std::exp(p / q);
}

// d/dalpha of a Beta(alpha, beta) draw near 0 (Taylor expansion).
template <class S>
S beta_grad_alpha_small(S x, S alpha, S beta) {
  const S factor = S(digamma_one(alpha)) - S(digamma_one(alpha + beta)) - std::log(x);
  S numer = 1;
  S series = numer / alpha * (factor + 1 / alpha);
  for (int i = 1; i <= 10; ++i) {
    const S si = S(i);
    numer *= (si - beta) * x / si;
    const S denom = alpha + si;
    series += numer / denom * (factor + 1 / denom);
  }
  const S result = x * std::pow(1 - x, -beta) * series;
  return std::isnan(result) ? S(0) : result;
}

// d/dbeta of a Beta(alpha, beta) draw near 0 (Taylor expansion).
template <class S>
S beta_grad_beta_small(S x, S alpha, S beta) {
  const S factor = S(digamma_one(alpha + beta)) - S(digamma_one(beta));
  S numer = 1, betas = 1, dbetas = 0, series = factor / alpha;
  for (int i = 1; i <= 8; ++i) {
    const S si = S(i);
    numer *= -x / si;
    dbetas = dbetas * (beta - si) + betas;
    betas = betas * (beta - si);
    series += numer / (alpha + si) * (dbetas + factor * betas);
  }
  const S result = -std::pow(1 - x, 1 - beta) * series;
  return std::isnan(result) ? S(0) : result;
}

// d/dalpha of a Beta(alpha, beta) draw for large alpha and beta (Rice saddle point).
A beta_grad_alpha_mid(A x, A alpha, A beta) {
  const A total = alpha + beta;
  const A mean = alpha / total;
  const A std = std::sqrt(alpha * beta / (total + 1)) / total;
  if (mean - 0.1 * std <= x && x <= mean + 0.1 * std) {  // away from the singularity at x = mean
    const A poly = 47 * x * (beta * beta) * (beta * beta) +
                   alpha * ((43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta +
                            alpha * (3 * (59 + 180 * beta - 90 * x) * (beta * beta) +
                                     alpha * ((453 + 1620 * beta * (1 - x) - 455 * x) * beta +
                                              alpha * (8 * (1 - x) * (135 * beta - 11)))));
    const A prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total);
    const A prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total);
    return prefactor_num / (1 - x) * poly / prefactor_den;
  }
  const A prefactor = -x / std::sqrt(2 * alpha * beta / total);
  const A stirling = (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta)) /
                     (1 + 1 / (12 * total) + 1 / (288 * total * total));
  const A term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta);
  const A axbx = alpha * (x - 1) + beta * x;
  const A term1_den = std::sqrt(2 * alpha / beta) * std::pow(total, A(1.5)) * axbx * axbx;
  const A term1 = term1_num / term1_den;
  const A term2 = 0.5 * std::log(alpha / (total * x));
  const A term3_num = std::sqrt(8 * alpha * beta / total);
  const A term3_den = beta * x + alpha * (x - 1);
  const A term3 = term3_num / term3_den;
  const A term4_base = beta * std::log(beta / (total * (1 - x))) + alpha * std::log(alpha / (total * x));
  const A term4 = std::pow(term4_base, A(-1.5));
  const A term1234 = term1 + term2 * (term3 + (x < mean ? term4 : -term4));
  return stirling * prefactor * term1234;
}

// -(d/dalpha cdf(x; alpha, beta)) / pdf(x; alpha, beta) / (1 - x) for
// x ~ Beta(alpha, beta), beta = total - alpha.
template <class S>
S dirichlet_grad_one(S x, S alpha, S total) {
  const S beta = total - alpha;
  const A beta_ = A(total) - A(alpha);
  const S boundary = total * x * (1 - x);
  if (x <= S(0.5) && boundary < S(2.5)) return beta_grad_alpha_small<S>(x, alpha, beta);
  if (x >= S(0.5) && boundary < S(0.75)) return -beta_grad_beta_small<S>(1 - x, beta, alpha);
  if (alpha > 6 && beta > 6) return S(beta_grad_alpha_mid(x, alpha, beta_));
  // A rational correction to an analytic approximation.
  static const A c[2][3][3][4] = {
      {{{1.003668233, -0.01061107488, -0.0657888334, 0.01201642863},
        {0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033},
        {-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013}},
       {{0.221950385, -0.3187676331, 0.01799915743, 0.01074823814},
        {-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057},
        {0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05}},
       {{-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565},
        {0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181},
        {0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05}}},
      {{{1, -0.02924021934, -0.04438342661, 0.007285809825},
        {0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521},
        {-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149}},
       {{0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273},
        {0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956},
        {-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05}},
       {{0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05},
        {0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05},
        {-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06}}},
  };
  const A u = std::log(A(x));
  const A a = std::log(A(alpha)) - u;
  const A b = std::log(A(total)) - a;
  const A pow_u[3] = {1, u, u * u};
  const A pow_a[3] = {1, a, a * a};
  A p = 0, q = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const A ua = pow_u[i] * pow_a[j];
      p += ua * (c[0][i][j][0] + b * (c[0][i][j][1] + b * (c[0][i][j][2] + b * c[0][i][j][3])));
      q += ua * (c[1][i][j][0] + b * (c[1][i][j][1] + b * (c[1][i][j][2] + b * c[1][i][j][3])));
    }
  const A approx = A(x) * (digamma_one(A(total)) - digamma_one(A(alpha))) / beta_;
  return S(p / q * approx);
}

void reparam_grad_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto op = static_cast<const ReparamGrad&>(p).op;
  const int64_t n = out[0].meta->numel();
  LUCID_DISPATCH_FLOAT(out[0].meta->dtype, p.name().c_str(), [&] {
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* a = static_cast<const T*>(in[0].data);
    const T* b = static_cast<const T*>(in[1].data);
    const T* c = in.size() > 2 ? static_cast<const T*>(in[2].data) : nullptr;
    T* o = static_cast<T*>(out[0].data);
    parallel_for(n, kDrawGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        if (op == ReparamGradOp::StandardGamma)
          store(o, i, S(standard_gamma_grad_one(A(load(a, i)), A(load(b, i)))));
        else
          store(o, i, dirichlet_grad_one<S>(S(load(a, i)), S(load(b, i)), S(load(c, i))));
      }
    });
  });
}
LUCID_REGISTER_KERNEL(ReparamGrad, CPU, reparam_grad_kernel);

}  // namespace

}  // namespace lucid::cpu
