#pragma once
// The public op API: what users (and VJP rules) call. Broadcasting, dtype
// promotion and argument checks happen here, once; the primitives underneath
// (primitives.h) see same-dtype, validated inputs.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lucid/core/tensor.h"

namespace lucid {

// A Python-style number: a bool, an integer or a float. Mixed with tensors it
// follows PyTorch's "wrapped number" promotion (it never widens the tensor's
// dtype within the same category).
struct Scalar {
  enum class Kind : uint8_t { Bool, Int, Float } kind = Kind::Float;
  double f = 0;
  int64_t i = 0;
  Scalar() = default;
  Scalar(double v) : kind(Kind::Float), f(v), i(int64_t(v)) {}   // NOLINT
  Scalar(float v) : Scalar(double(v)) {}                          // NOLINT
  Scalar(int64_t v) : kind(Kind::Int), f(double(v)), i(v) {}      // NOLINT
  Scalar(int v) : Scalar(int64_t(v)) {}                           // NOLINT
  static Scalar boolean(bool b) {
    Scalar s{int64_t(b)};
    s.kind = Kind::Bool;
    return s;
  }
  double to_double() const { return f; }
};

// ---- creation -------------------------------------------------------------
Tensor full(const Shape& shape, Scalar value, std::optional<DType> dtype = std::nullopt, Device device = {});
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = {});
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
Tensor arange(double start, double end, double step, DType dtype, Device device = {});
Tensor scalar_tensor(Scalar value, DType dtype, Device device = {});
// The tensor a Python number becomes when combined with `like`.
Tensor wrap_scalar(Scalar value, const Tensor& like);
Tensor eye(int64_t n, int64_t m, DType dtype = DType::Float32, Device device = {});

// ---- random (counter-based: a (seed, offset) pair picks the stream) -----
void manual_seed(uint64_t seed);
uint64_t initial_seed();
// Takes `count` numbers from the global generator: returns the (seed, offset)
// to use and advances the offset.
std::pair<uint64_t, uint64_t> next_random_key(uint64_t count);
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Device device = {});
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Device device = {});
// Uniform/normal draws keyed by an int64 tensor [seed, offset] (a feed in a
// compiled step).
// Draws keyed by `key` (int64 [seed, offset]), made on `device` (default: the key's).
Tensor random_uniform(const Shape& shape, DType dtype, const Tensor& key, std::optional<Device> device = {});
Tensor random_normal(const Shape& shape, DType dtype, const Tensor& key, std::optional<Device> device = {});
Tensor random_key_tensor(uint64_t count, Device device = {});
// One draw per element from distributions with tensor parameters (broadcast
// to one shape, in the first one's floating dtype); `key` as random_uniform's,
// drawn from the global generator when absent. standard_gamma is
// differentiable w.r.t. the concentration (standard_gamma_grad).
Tensor standard_gamma(const Tensor& concentration, const std::optional<Tensor>& key = {});
Tensor poisson(const Tensor& rate, const std::optional<Tensor>& key = {});
Tensor binomial(const Tensor& count, const Tensor& prob, const std::optional<Tensor>& key = {});
// d x / d concentration for x ~ Gamma(concentration, 1) (PyTorch's _standard_gamma_grad).
Tensor standard_gamma_grad(const Tensor& concentration, const Tensor& sample);
// PyTorch's _dirichlet_grad(x, alpha, total): the Beta(alpha, total - alpha)
// reparameterisation gradient that Dirichlet and Beta draws use.
Tensor dirichlet_grad(const Tensor& x, const Tensor& concentration, const Tensor& total);

// ---- dtype / copies -------------------------------------------------------
Tensor cast(const Tensor& t, DType dtype);  // no-op when already `dtype`
// PyTorch's preserve_format (clone, .to, the *_like factories): `make` gets
// `t` permuted into its memory order (outermost dim first) and returns a
// fresh row-major tensor; the result is that, permuted back, so it has t's
// memory order (and t's strides where t is dense). Row-major t: make(t).
Tensor preserve_layout(const Tensor& t, const std::function<Tensor(const Tensor&)>& make);
// The same with a given memory order (channels_last: 0, 2, 3, 1).
Tensor in_memory_order(const Tensor& t, const std::vector<int64_t>& order,
                       const std::function<Tensor(const Tensor&)>& make);
Tensor clone(const Tensor& t);            // new memory in t's memory order, as torch.clone
Tensor contiguous_copy(const Tensor& t);  // new row-major memory
Tensor to_device(const Tensor& t, const Device& device);
DType result_type(const Tensor& a, const Tensor& b);

// ---- elementwise ------------------------------------------------------------
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor erf(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor bitwise_not(const Tensor& x);  // integers; bool: logical_not
// Special functions (integers compute in the default float type).
Tensor lgamma(const Tensor& x);    // log |Gamma(x)|
Tensor digamma(const Tensor& x);   // d/dx lgamma(x)
Tensor trigamma(const Tensor& x);  // polygamma(1, x)
Tensor erfinv(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);

// While one lives, elementwise results on this thread are row-major
// whatever their operands' order: ops whose PyTorch result is row-major but
// whose last step is elementwise (a convolution's bias add, tril, masked_fill)
// write it so, without a separate copy.
class RowMajorResults {
 public:
  RowMajorResults();
  ~RowMajorResults();
  RowMajorResults(const RowMajorResults&) = delete;
  RowMajorResults& operator=(const RowMajorResults&) = delete;

 private:
  bool was_;
};
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);  // Python's %: sign of the divisor
Tensor fmod(const Tensor& a, const Tensor& b);       // C's fmod: sign of the dividend
// Integer and bool bit operations (shifts as PyTorch's: see backend/cpu/math.h)
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);  // either may be undefined

// Scalar conveniences (wrapped-number promotion).
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor rsub(const Tensor& a, Scalar b);  // b - a
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor pow(const Tensor& a, Scalar b);

// ---- reductions -------------------------------------------------------------
// `dims` empty means all dimensions.
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1, bool keepdim = false);
Tensor std_(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor norm(const Tensor& x, double p = 2, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// max/min along a dim: (values, indices)
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim = false);
// Sums `x` down to `shape` (the adjoint of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- linear algebra ---------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
// op(a) @ op(b) for 2-D (or equal-batch) operands, op a transpose where the
// flag says. A transposed row-major operand (x.t(), x.mT) is passed to the
// kernel as a flag rather than copied, exactly as a compiled step folds the
// transpose in, so both run the same GEMM and give the same bits.
Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// ---- shape --------------------------------------------------------------------
// Views (outputs share x's memory; PyTorch's view semantics).
Tensor reshape(const Tensor& x, Shape shape);  // one -1 allowed; a copy when the strides do not allow a view
Tensor view(const Tensor& x, Shape shape);     // like reshape, but never a copy (Error instead)
Tensor alias(const Tensor& x);                 // a new view with x's layout (PyTorch's alias)
Tensor contiguous(const Tensor& x);            // x itself, or a row-major copy
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step);
// PyTorch's as_strided: sizes and strides in elements of x's memory,
// `storage_offset` absolute (default: x's own).
Tensor as_strided(const Tensor& x, const Shape& size, const Shape& stride, std::optional<int64_t> storage_offset);
// On a 1-D tensor holding a storage's elements: the tensor at `layout` in it,
// and the 1-D tensor with the elements at `layout` replaced (accumulate: added).
Tensor as_strided_flat(const Tensor& flat, const Layout& layout);
Tensor as_strided_scatter(const Tensor& flat, const Tensor& src, const Layout& layout, bool accumulate);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims = std::nullopt);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Tensor expand(const Tensor& x, const Shape& shape);  // -1 keeps a dim
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// split(x, sizes, dim) as one node whose VJP is one cat (see Split), for a
// loop that consumes every part. split() makes one slice per part, which
// every backend lowers.
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// Basic slicing: per-dim [start, stop) with step > 0 (already normalised).
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
             const std::vector<int64_t>& steps);
// `base` with the slice replaced by `src` (broadcast to the slice's shape).
Tensor slice_scatter(const Tensor& base, const Tensor& src, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& stops, const std::vector<int64_t>& steps);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0);  // F.pad layout

// ---- indexing -------------------------------------------------------------------
// `caller` is the op an out-of-range index is reported as (embedding uses it).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, const std::string& caller = "index_select");
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// gather() of a loss's log-probabilities at its class targets: an
// out-of-range target raises IndexError naming `loss` (eagerly and inside a
// compiled step alike).
Tensor gather_targets(const Tensor& logp, int64_t dim, const Tensor& target, const std::string& loss);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// reduce: "sum", "prod", "mean", "amax" or "amin" (PyTorch's scatter_reduce).
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);
// reduce: "prod", "mean", "amax" or "amin" (PyTorch's index_reduce).
Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self = true);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
Tensor one_hot(const Tensor& index, int64_t num_classes = -1);
// Reads x at integer coordinates (NumPy advanced indexing over the leading
// dims of x): `indices[k]` index dim k, all broadcast together.
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
// x with x[indices] = values (accumulate: +=).
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

// ---- sorting and scans ------------------------------------------------------------
// (values, indices) sorted along `dim`; stable: equal elements keep their
// order, NaN sorts above every number (PyTorch's order).
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
// (values, indices) of the k largest (or smallest) along `dim`, sorted.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true);
// [count, ndim] int64 coordinates of the non-zero elements (eager only:
// the count decides the shape).
Tensor nonzero(const Tensor& x);
// Inclusive cumulative sum / product along `dim`; integers and bool give
// int64 unless `dtype` says otherwise (the input is cast to it first).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- nn building blocks -------------------------------------------------------------
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- in-place (PyTorch's autograd rules; return `self`) --------------------------------
// Replaces self's contents with `value` (cast to self's dtype, broadcast to its
// shape) and, when recording, self's history with value's.
Tensor& assign_(Tensor& self, const Tensor& value);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& fill_(Tensor& self, Scalar value);
Tensor& zero_(Tensor& self);

// ---- C++ operators (what generic code over tensors and scalars reads like) ----
// ---- decompositions and solvers (torch.linalg; ops/decompositions.cpp) ------
// Matrices are the last two dims, float32 or float64. The *_ex forms return
// LAPACK's info per matrix too and raise LinAlgError only when check_errors.
std::vector<Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot = true, bool check_errors = false,
                                        const std::string& op = "linalg.lu_factor_ex");  // LU, pivots, info
std::vector<Tensor> linalg_lu(const Tensor& A, bool pivot = true);                        // P, L, U
Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true,
                       bool adjoint = false);
std::vector<Tensor> linalg_inv_ex(const Tensor& A, bool check_errors = false);  // inverse, info
Tensor linalg_inv(const Tensor& A);
std::vector<Tensor> linalg_solve_ex(const Tensor& A, const Tensor& B, bool left = true,
                                    bool check_errors = false);  // result, info
Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left = true);
std::vector<Tensor> linalg_slogdet(const Tensor& A);  // sign, logabsdet
Tensor linalg_det(const Tensor& A);
Tensor logdet(const Tensor& A);
std::vector<Tensor> linalg_cholesky_ex(const Tensor& A, bool upper = false, bool check_errors = false);  // L, info
Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                               bool unitriangular = false);
std::vector<Tensor> linalg_qr(const Tensor& A, const std::string& mode = "reduced");  // Q, R
std::vector<Tensor> linalg_eigh(const Tensor& A, const std::string& UPLO = "L");      // eigenvalues, eigenvectors
Tensor linalg_eigvalsh(const Tensor& A, const std::string& UPLO = "L");
std::vector<Tensor> linalg_svd(const Tensor& A, bool full_matrices = true);  // U, S, Vh
Tensor linalg_svdvals(const Tensor& A);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return rsub(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(double a, const Tensor& b) { return div(wrap_scalar(a, b), b); }

}  // namespace lucid
