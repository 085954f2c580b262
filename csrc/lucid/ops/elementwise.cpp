// Elementwise primitives (Unary, Binary, Where, Cast, Copy): shape rules,
// VJPs, and the public ops with broadcasting and PyTorch's type promotion.
#include <cmath>
#include <cstring>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::grads_for;

// Whether the strides are exactly the row-major ones, size-1 dims included.
static bool has_row_major_strides(const Tensor& t) {
  int64_t expected = 1;
  for (size_t i = size_t(t.ndim()); i-- > 0;) {
    if (t.strides()[i] != expected) return false;
    expected *= t.shape()[i];
  }
  return true;
}

// PyTorch's channels_last (and channels_last_3d) contiguity: channels
// innermost, then the spatial dims from the last, the batch outermost.
static std::vector<size_t> channels_last_order(size_t ndim) {
  std::vector<size_t> inner_first{1};
  for (size_t d = ndim - 1; d >= 2; --d) inner_first.push_back(d);
  inner_first.push_back(0);
  return inner_first;
}
static bool is_channels_last(const Shape& shape, const Shape& strides) {
  if (shape.size() != 4 && shape.size() != 5) return false;
  int64_t expected = 1;
  for (size_t d : channels_last_order(shape.size())) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// The strides PyTorch's TensorIterator gives the result of an elementwise op
// of `inputs` with the broadcast shape `shape`: row-major when the operands
// are; theirs when they all share one dense layout; channels_last when they
// all are; otherwise the dims ordered by the operands' strides.
static Shape elementwise_result_strides(const std::vector<Tensor>& inputs, const Shape& shape) {
  bool same_shape = true, contiguous = true, channels_last = true, dense_alike = true;
  for (const auto& t : inputs) {
    same_shape = same_shape && t.shape() == shape;
    contiguous = contiguous && t.is_contiguous();
    channels_last = channels_last && is_channels_last(t.shape(), t.strides());
    dense_alike = dense_alike && t.strides() == inputs[0].strides() &&
                  is_non_overlapping_and_dense(t.shape(), t.strides());
  }
  if (same_shape && contiguous) return contiguous_strides(shape);
  const size_t n = shape.size();
  Shape strides(n);
  int64_t acc = 1;
  auto lay_out = [&](auto&& inner_first) {
    for (auto d : inner_first) {
      strides[size_t(d)] = acc;
      acc *= std::max<int64_t>(shape[size_t(d)], 1);
    }
  };
  if (same_shape && channels_last) {
    lay_out(channels_last_order(n));
    return strides;
  }
  if (same_shape && dense_alike) return inputs[0].strides();
  // Each operand's strides over the result's dims, 0 where it broadcasts.
  std::vector<Shape> operand_strides;
  for (const auto& t : inputs) {
    if (t.ndim() == 0) continue;
    Shape st(n, 0);
    const size_t lead = n - size_t(t.ndim());
    for (size_t i = 0; i < size_t(t.ndim()); ++i)
      st[lead + i] = t.shape()[i] == 1 && shape[lead + i] != 1 ? 0 : t.strides()[i];
    operand_strides.push_back(std::move(st));
  }
  const std::vector<int64_t> order = memory_order(shape, operand_strides);
  lay_out(std::vector<int64_t>(order.rbegin(), order.rend()));
  return strides;
}

static thread_local bool t_row_major_results = false;
RowMajorResults::RowMajorResults() : was_(t_row_major_results) { t_row_major_results = true; }
RowMajorResults::~RowMajorResults() { t_row_major_results = was_; }

// PyTorch's elementwise results take their operands' memory order
// (TensorIterator): a transposed or channels-last operand gives a result
// laid out the same way, so stride(), is_contiguous() and view() agree with
// PyTorch's. The kernel runs on the operands permuted into that order
// (row-major there, the fast case) and the result is permuted back.
template <class P, class... Args>
static Tensor call_elementwise(const std::vector<Tensor>& inputs, Args&&... args) {
  auto prim = std::make_shared<const P>(std::forward<Args>(args)...);
  bool row_major = true;
  for (const auto& t : inputs) row_major = row_major && has_row_major_strides(t);
  if (row_major || t_row_major_results) return apply1(prim, inputs);
  std::vector<TensorMeta> metas;
  for (const auto& t : inputs) metas.push_back(t.meta());
  const Shape shape = prim->infer(metas)[0].shape;
  const Shape strides = elementwise_result_strides(inputs, shape);
  const size_t n = shape.size();
  // The dims outermost first (where the size-1 dims go changes no address).
  std::vector<int64_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = int64_t(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[size_t(a)] > strides[size_t(b)]; });
  bool in_order = true;
  int64_t last = -1;
  for (int64_t d : order)
    if (shape[size_t(d)] != 1) {
      in_order = in_order && d > last;
      last = d;
    }
  Tensor out;
  if (in_order) {
    out = apply1(prim, inputs);
  } else {
    std::vector<Tensor> permuted;
    for (const auto& t : inputs) {
      if (t.ndim() == 0) {  // a scalar broadcasts in any order (and may be a host scalar)
        permuted.push_back(t);
        continue;
      }
      Tensor full_rank = t;
      while (size_t(full_rank.ndim()) < n) full_rank = unsqueeze(full_rank, 0);
      permuted.push_back(permute(full_rank, order));
    }
    std::vector<int64_t> inverse(n);
    for (size_t i = 0; i < n; ++i) inverse[size_t(order[i])] = int64_t(i);
    out = permute(apply1(prim, permuted), inverse);
    out.impl()->view_base = nullptr;  // memory of its own, not a view
  }
  // Exactly PyTorch's strides: they differ from the permuted row-major ones
  // at most at size-1 dims, which address nothing.
  out.impl()->strides = strides;
  return out;
}

// ------------------------------------------------------------------ names
const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"neg",     "abs",      "sign",      "exp",  "log",   "log1p",       "expm1",
                                "sqrt",    "rsqrt",    "square",    "reciprocal", "sin", "cos",    "tanh",
                                "sigmoid", "relu",     "gelu",      "gelu_tanh", "silu", "erf",    "floor",
                                "ceil",    "round",    "trunc",     "logical_not", "isfinite", "isnan", "isinf",
                                "bitwise_not", "lgamma", "digamma", "trigamma", "erfinv",
                                "gelu_derivative", "gelu_tanh_derivative", "silu_derivative"};
  return names[int(op)];
}
const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
                                "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                "logical_or", "logical_xor", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
                                "bitwise_left_shift", "bitwise_right_shift"};
  return names[int(op)];
}
void integer_division_by_zero(BinaryOp op) {
  fail<Error>("ZeroDivisionError: ", binary_op_name(op), "() of integer tensors divides by zero");
}

// ------------------------------------------------------------------ Unary
std::string Unary::name() const { return unary_op_name(op); }

std::vector<TensorMeta> Unary::infer(const std::vector<TensorMeta>& in) const {
  TensorMeta m = in[0];
  if (unary_returns_bool(op)) m.dtype = DType::Bool;
  return {m};
}

uint8_t Unary::saved() const {
  switch (op) {
    case UnaryOp::Neg: case UnaryOp::Sign: case UnaryOp::Floor: case UnaryOp::Ceil:
    case UnaryOp::Round: case UnaryOp::Trunc:
      return 0;
    case UnaryOp::Exp: case UnaryOp::Expm1: case UnaryOp::Sqrt: case UnaryOp::Rsqrt:
    case UnaryOp::Reciprocal: case UnaryOp::Tanh: case UnaryOp::Sigmoid: case UnaryOp::Relu:
    case UnaryOp::Erfinv:
      return kSaveOutputs;
    default:
      return kSaveInputs;
  }
}

static Tensor unary(UnaryOp op, const Tensor& x);

std::vector<Tensor> Unary::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                               const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& x = in[0];
  const Tensor& y = out[0];
  const Tensor& g = cot[0];
  Tensor r;
  switch (op) {
    case UnaryOp::Neg: r = neg(g); break;
    case UnaryOp::Abs: r = mul(g, sign(x)); break;
    case UnaryOp::Exp: r = mul(g, y); break;
    case UnaryOp::Log: r = div(g, x); break;
    case UnaryOp::Log1p: r = div(g, add(x, 1.0)); break;
    case UnaryOp::Expm1: r = mul(g, add(y, 1.0)); break;
    case UnaryOp::Sqrt: r = div(g, mul(y, 2.0)); break;
    case UnaryOp::Rsqrt: r = mul(mul(g, -0.5), mul(mul(y, y), y)); break;
    case UnaryOp::Square: r = mul(g, mul(x, 2.0)); break;
    case UnaryOp::Reciprocal: r = mul(neg(g), mul(y, y)); break;
    case UnaryOp::Sin: r = mul(g, cos(x)); break;
    case UnaryOp::Cos: r = mul(g, neg(sin(x))); break;
    case UnaryOp::Tanh: r = mul(g, rsub(mul(y, y), 1.0)); break;
    case UnaryOp::Sigmoid: r = mul(g, mul(y, rsub(y, 1.0))); break;
    // The zeros a select passes are a scalar, not a tensor of g's size to fill and read.
    case UnaryOp::Relu: r = where(gt(y, wrap_scalar(0.0, y)), g, wrap_scalar(0.0, g)); break;
    case UnaryOp::GeluErf: r = mul(g, unary(UnaryOp::GeluErfGrad, x)); break;
    case UnaryOp::GeluTanh: r = mul(g, unary(UnaryOp::GeluTanhGrad, x)); break;
    case UnaryOp::Silu: r = mul(g, unary(UnaryOp::SiluGrad, x)); break;
    case UnaryOp::GeluErfGrad: {
      // d/dx (Phi(x) + x phi(x)) = phi(x) (2 - x^2)
      Tensor x2 = mul(x, x);
      Tensor pdf = mul(exp(mul(x2, -0.5)), 0.5 * M_2_SQRTPI * M_SQRT1_2);
      r = mul(g, mul(pdf, rsub(x2, 2.0)));
      break;
    }
    case UnaryOp::GeluTanhGrad: {
      // f = (1 + t)/2 + x s u'/2 with u = k (x + c x^3), t = tanh(u), s = 1 - t^2:
      // f' = s u' + x s (u'' - 2 t u'^2) / 2, u' = k (1 + 3 c x^2), u'' = 6 k c x.
      const double k = M_SQRT2 * M_2_SQRTPI * 0.5, c = 0.044715;
      Tensor x2 = mul(x, x);
      Tensor t = tanh(mul(mul(x, add(mul(x2, c), 1.0)), k));
      Tensor s = rsub(mul(t, t), 1.0);
      Tensor du = mul(add(mul(x2, 3.0 * c), 1.0), k);
      Tensor bend = sub(mul(x, 6.0 * k * c), mul(mul(t, mul(du, du)), 2.0));
      r = mul(g, add(mul(s, du), mul(mul(mul(x, s), bend), 0.5)));
      break;
    }
    case UnaryOp::SiluGrad: {
      // d/dx s (1 + x (1 - s)) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x)
      Tensor s = sigmoid(x);
      r = mul(g, mul(mul(s, rsub(s, 1.0)), add(mul(x, rsub(mul(s, 2.0), 1.0)), 2.0)));
      break;
    }
    case UnaryOp::Erf: r = mul(g, mul(exp(neg(mul(x, x))), M_2_SQRTPI)); break;
    case UnaryOp::Lgamma: r = mul(g, digamma(x)); break;
    case UnaryOp::Digamma: r = mul(g, trigamma(x)); break;
    case UnaryOp::Erfinv: r = mul(g, mul(exp(mul(y, y)), 1.0 / M_2_SQRTPI)); break;  // sqrt(pi)/2 e^(y^2)
    case UnaryOp::Trigamma:
      fail<NotImplementedError>("the derivative of polygamma(1, x) (polygamma(2, x)) is not implemented");
    case UnaryOp::Sign: case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc:
      r = zeros_like(g);
      break;
    default:
      fail<Error>("the derivative of '", name(), "' is not defined");
  }
  return {r};
}

static Tensor unary(UnaryOp op, const Tensor& x) {
  Tensor in = x;
  switch (op) {
    case UnaryOp::Neg:
      LUCID_CHECK_T(TypeError, x.dtype() != DType::Bool,
                    "negation, the `-` operator, on a bool tensor is not supported; use logical_not()");
      break;
    case UnaryOp::Abs: case UnaryOp::Sign: case UnaryOp::Square:
      if (x.dtype() == DType::Bool && op != UnaryOp::Square) return clone(x);
      break;
    case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc:
      if (!is_floating(x.dtype())) return clone(x);
      break;
    case UnaryOp::Relu:
      LUCID_CHECK_T(TypeError, x.dtype() != DType::Bool, "relu is not defined for bool tensors");
      break;
    case UnaryOp::LogicalNot:
      in = cast(x, DType::Bool);
      break;
    case UnaryOp::BitNot:
      LUCID_CHECK_T(TypeError, !is_floating(x.dtype()),
                    "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
      if (x.dtype() == DType::Bool) return unary(UnaryOp::LogicalNot, x);
      break;
    case UnaryOp::IsFinite: case UnaryOp::IsNan: case UnaryOp::IsInf:
      if (!is_floating(x.dtype())) {
        // Integers are always finite, never nan or inf.
        return full(x.shape(), Scalar::boolean(op == UnaryOp::IsFinite), DType::Bool, x.device());
      }
      break;
    default:  // transcendental: integers compute in the default float type
      if (!is_floating(x.dtype())) in = cast(x, default_float_dtype());
  }
  return call_elementwise<Unary>({in}, op);
}

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor log1p(const Tensor& x) { return unary(UnaryOp::Log1p, x); }
Tensor expm1(const Tensor& x) { return unary(UnaryOp::Expm1, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, x); }
Tensor square(const Tensor& x) {
  return x.dtype() == DType::Bool ? unary(UnaryOp::Square, cast(x, DType::Int64)) : unary(UnaryOp::Square, x);
}
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return unary(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x);
}
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, x); }
Tensor floor(const Tensor& x) { return unary(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary(UnaryOp::Ceil, x); }
Tensor round(const Tensor& x) { return unary(UnaryOp::Round, x); }
Tensor trunc(const Tensor& x) { return unary(UnaryOp::Trunc, x); }
Tensor logical_not(const Tensor& x) { return unary(UnaryOp::LogicalNot, x); }
Tensor bitwise_not(const Tensor& x) { return unary(UnaryOp::BitNot, x); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::Lgamma, x); }
Tensor digamma(const Tensor& x) { return unary(UnaryOp::Digamma, x); }
Tensor trigamma(const Tensor& x) { return unary(UnaryOp::Trigamma, x); }
Tensor erfinv(const Tensor& x) { return unary(UnaryOp::Erfinv, x); }
Tensor isfinite(const Tensor& x) { return unary(UnaryOp::IsFinite, x); }
Tensor isnan(const Tensor& x) { return unary(UnaryOp::IsNan, x); }
Tensor isinf(const Tensor& x) { return unary(UnaryOp::IsInf, x); }

Tensor softplus(const Tensor& x, double beta, double threshold) {
  // x where beta*x > threshold (linear regime), else log1p(exp(beta*x))/beta
  // (the smooth branch's argument is capped with where, not minimum: at
  // beta*x == threshold minimum would split the derivative between its tied
  // operands; PyTorch takes the smooth branch's there)
  Tensor bx = mul(x, beta);
  const Tensor t = wrap_scalar(threshold, bx);
  const Tensor linear = gt(bx, t);
  Tensor soft = div(log1p(exp(where(linear, t, bx))), beta);
  return where(linear, x, soft);
}

// The device of an elementwise result: that of its first input that is not
// a 0-d host scalar (those mix with any device).
static Device result_device(const std::vector<TensorMeta>& in) {
  for (const auto& m : in)
    if (!(m.shape.empty() && m.device.type == DeviceType::CPU)) return m.device;
  return in[0].device;
}

// ------------------------------------------------------------------ Binary
std::string Binary::name() const { return binary_op_name(op); }

std::vector<TensorMeta> Binary::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(TypeError, in[0].dtype == in[1].dtype, "internal: ", name(), " got ", dtype_name(in[0].dtype), " and ",
                dtype_name(in[1].dtype));
  TensorMeta m{broadcast_shapes(in[0].shape, in[1].shape), in[0].dtype, result_device(in)};
  if (binary_returns_bool(op)) m.dtype = DType::Bool;
  return {m};
}

uint8_t Binary::saved() const {
  switch (op) {
    case BinaryOp::Add: case BinaryOp::Sub: return 0;
    case BinaryOp::Pow: return kSaveInputs | kSaveOutputs;
    default: return kSaveInputs;
  }
}

bool Binary::saves_input(int i, const std::vector<bool>& needs_grad) const {
  switch (op) {
    case BinaryOp::Mul: return needs_grad[1 - i];         // d(a*b)/da = b, d(a*b)/db = a
    case BinaryOp::Div: return i == 1 || needs_grad[1];  // d(a/b)/da = 1/b; a only for d/db
    default: return saves_input(i);
  }
}

std::vector<Tensor> Binary::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor &a = in[0], &b = in[1], &g = cot[0];
  return grads_for(argnums, [&](int i) -> Tensor {
    const Shape& target = in[i].shape();
    Tensor r;
    switch (op) {
      case BinaryOp::Add: r = g; break;
      case BinaryOp::Sub: r = i == 0 ? g : neg(g); break;
      case BinaryOp::Mul: r = mul(g, i == 0 ? b : a); break;
      case BinaryOp::Div: r = i == 0 ? div(g, b) : div(mul(neg(g), a), mul(b, b)); break;
      case BinaryOp::Pow:
        if (i == 0) {
          // b * a^(b-1), with 0 where b == 0 (PyTorch's convention)
          Tensor d = mul(b, pow(a, sub(b, 1.0)));
          r = mul(g, where(eq(b, wrap_scalar(0.0, b)), zeros_like(d), d));
        } else {
          // y * log(a), with 0 where a == 0 and b >= 0
          Tensor d = mul(out[0], log(a));
          Tensor zero_base = logical_and(eq(a, wrap_scalar(0.0, a)), ge(b, wrap_scalar(0.0, b)));
          r = mul(g, where(zero_base, zeros_like(d), d));
        }
        break;
      case BinaryOp::Maximum: case BinaryOp::Minimum: {
        // PyTorch's rule: ties split the gradient evenly, the losing side
        // gets none, and a NaN on either side passes it to both.
        Tensor mine = i == 0 ? a : b, other = i == 0 ? b : a;
        Tensor loses = op == BinaryOp::Maximum ? lt(mine, other) : gt(mine, other);
        r = where(loses, wrap_scalar(0.0, g), where(eq(mine, other), mul(g, 0.5), g));
        break;
      }
      case BinaryOp::Atan2: {
        Tensor denom = add(mul(a, a), mul(b, b));
        r = i == 0 ? mul(g, div(b, denom)) : mul(g, div(neg(a), denom));
        break;
      }
      case BinaryOp::Remainder: r = i == 0 ? g : mul(neg(g), floor_divide(a, b)); break;
      case BinaryOp::Fmod: r = i == 0 ? g : mul(neg(g), trunc(div(a, b))); break;
      case BinaryOp::FloorDiv: r = zeros_like(g); break;
      default: fail<Error>("the derivative of '", name(), "' is not defined");
    }
    return sum_to(r, target);
  });
}

static bool is_zero_dim(const Tensor& t) { return t.ndim() == 0; }
static int category(DType t) { return t == DType::Bool ? 0 : (is_floating(t) ? 2 : 1); }

DType result_type(const Tensor& a, const Tensor& b) {
  const bool za = is_zero_dim(a), zb = is_zero_dim(b);
  if (za == zb) return promote_types(a.dtype(), b.dtype());
  const Tensor& dimmed = za ? b : a;
  const Tensor& zero = za ? a : b;
  return category(zero.dtype()) > category(dimmed.dtype()) ? zero.dtype() : dimmed.dtype();
}

Tensor wrap_scalar(Scalar value, const Tensor& like) {
  const int scat = value.kind == Scalar::Kind::Bool ? 0 : (value.kind == Scalar::Kind::Int ? 1 : 2);
  DType dt = like.dtype();
  if (scat > category(dt)) dt = scat == 2 ? default_float_dtype() : DType::Int64;
  return detail::wrapped_scalar_tensor(value, dt, like.device());
}

static Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  DType dt = result_type(a, b);
  switch (op) {
    case BinaryOp::Div: case BinaryOp::Atan2:
      if (!is_floating(dt)) dt = default_float_dtype();
      break;
    case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr: case BinaryOp::LogicalXor:
      dt = DType::Bool;
      break;
    case BinaryOp::Sub:
      LUCID_CHECK_T(TypeError, a.dtype() != DType::Bool && b.dtype() != DType::Bool,
                    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                    "a mask, use the `~` or `logical_not()` operator instead.");
      break;
    case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor:
    case BinaryOp::LeftShift: case BinaryOp::RightShift:
      if (is_floating(dt) || (dt == DType::Bool && (op == BinaryOp::LeftShift || op == BinaryOp::RightShift)))
        fail<NotImplementedError>("\"", binary_op_name(op), "\" not implemented for '", dtype_name(dt), "'");
      break;
    case BinaryOp::Add: case BinaryOp::Mul: case BinaryOp::Maximum: case BinaryOp::Minimum:
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
      break;
    default:
      if (dt == DType::Bool) dt = DType::Int64;
  }
  // Broadcast errors name both shapes (raised by the shape rule).
  return call_elementwise<Binary>({cast(a, dt), cast(b, dt)}, op);
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return binary(BinaryOp::FloorDiv, a, b); }
Tensor remainder(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Remainder, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Fmod, a, b); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return binary(BinaryOp::BitAnd, a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return binary(BinaryOp::BitOr, a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return binary(BinaryOp::BitXor, a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LeftShift, a, b); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return binary(BinaryOp::RightShift, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Atan2, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LogicalAnd, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LogicalOr, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return binary(BinaryOp::LogicalXor, a, b); }

Tensor add(const Tensor& a, Scalar b) { return add(a, wrap_scalar(b, a)); }
Tensor sub(const Tensor& a, Scalar b) { return sub(a, wrap_scalar(b, a)); }
Tensor rsub(const Tensor& a, Scalar b) { return sub(wrap_scalar(b, a), a); }
Tensor mul(const Tensor& a, Scalar b) { return mul(a, wrap_scalar(b, a)); }
Tensor div(const Tensor& a, Scalar b) { return div(a, wrap_scalar(b, a)); }
Tensor pow(const Tensor& a, Scalar b) {
  LUCID_CHECK(is_floating(a.dtype()) || b.kind != Scalar::Kind::Int || b.i >= 0,
              "Integers to negative integer powers are not allowed.");
  detail::check_scalar_fits(b, result_type(a, wrap_scalar(b, a)), "pow");
  if (a.dtype() == DType::Bool && b.kind == Scalar::Kind::Bool)  // PyTorch keeps bool here
    return b.i ? clone(a) : full_like(a, Scalar::boolean(true));
  // x ** 2 as x * x, when that keeps the result dtype (int ** 2.0 is float)
  if (b.kind != Scalar::Kind::Bool && b.f == 2.0 && (is_floating(a.dtype()) || b.kind == Scalar::Kind::Int))
    return square(a);
  // x ** 0.5 as sqrt(x), as PyTorch computes it: sqrt(-inf) and sqrt(-0.0)
  // are NaN and -0.0 where the C pow gives inf and 0.0.
  if (b.kind == Scalar::Kind::Float && b.f == 0.5 && is_floating(a.dtype())) return sqrt(a);
  // 16-bit floats compute in float32 with the exponent at that precision
  // (PyTorch's opmath), rounding once.
  if (a.dtype() == DType::Float16 || a.dtype() == DType::BFloat16) {
    const Tensor wide = cast(a, DType::Float32);
    return cast(pow(wide, wrap_scalar(b, wide)), a.dtype());
  }
  return pow(a, wrap_scalar(b, a));
}

// ------------------------------------------------------------------- Where
std::string Where::name() const { return "where"; }
std::vector<TensorMeta> Where::infer(const std::vector<TensorMeta>& in) const {
  LUCID_CHECK_T(TypeError, in[0].dtype == DType::Bool, "where: condition must be a bool tensor, got ",
                dtype_name(in[0].dtype));
  return {{broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape), in[2].shape), in[1].dtype, result_device(in)}};
}
std::vector<Tensor> Where::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&,
                               const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  const Tensor& g = cot[0];
  const Tensor z = wrap_scalar(0.0, g);
  return grads_for(argnums, [&](int i) {
    return sum_to(i == 1 ? where(in[0], g, z) : where(in[0], z, g), in[i].shape());
  });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  LUCID_CHECK_T(TypeError, cond.dtype() == DType::Bool,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                dtype_name(cond.dtype()));
  const DType dt = result_type(a, b);
  return call_elementwise<Where>({cond, cast(a, dt), cast(b, dt)});
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  LUCID_CHECK(lo.defined() || hi.defined(), "clamp: at least one of 'min' or 'max' must not be None");
  Tensor r = x;
  // PyTorch: min(max(x, lo), hi); a NaN in x or in a bound propagates.
  auto beyond = [](const Tensor& past, const Tensor& bound) {
    return is_floating(bound.dtype()) ? logical_or(past, isnan(bound)) : past;
  };
  if (lo.defined()) r = where(beyond(lt(r, lo), lo), cast(lo, result_type(r, lo)), r);
  if (hi.defined()) r = where(beyond(gt(r, hi), hi), cast(hi, result_type(r, hi)), r);
  return r;
}

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  Tensor tlo = lo ? wrap_scalar(*lo, x) : Tensor(), thi = hi ? wrap_scalar(*hi, x) : Tensor();
  DType dt = x.dtype();
  if (lo) dt = result_type(cast(x, dt), tlo);
  if (hi) dt = result_type(cast(x, dt), thi);
  if (lo) detail::check_scalar_fits(*lo, dt, "clamp");
  if (hi) detail::check_scalar_fits(*hi, dt, "clamp");
  // PyTorch compares in the result dtype: clamp(uint8, -2, 0.5) is a float
  // clamp (-2 does not wrap to 254 first).
  if (lo) tlo = detail::wrapped_scalar_tensor(*lo, dt, x.device());
  if (hi) thi = detail::wrapped_scalar_tensor(*hi, dt, x.device());
  return clamp(cast(x, dt), tlo, thi);
}

// -------------------------------------------------------------- Cast, Copy
std::string Cast::name() const { return std::string("cast(") + dtype_name(to) + ")"; }
std::vector<TensorMeta> Cast::infer(const std::vector<TensorMeta>& in) const {
  return {{in[0].shape, to, in[0].device}};
}
std::vector<Tensor> Cast::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>&, const std::vector<Tensor>& cot,
                              const std::vector<int>&) const {
  return {cast(cot[0], in[0].dtype())};
}

Tensor cast(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  return call_elementwise<Cast>({t}, dtype);
}

std::string Copy::name() const { return "copy"; }
std::vector<TensorMeta> Copy::infer(const std::vector<TensorMeta>& in) const { return {in[0]}; }
std::vector<Tensor> Copy::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>& cot,
                              const std::vector<int>&) const {
  return {cot[0]};
}

Tensor contiguous_copy(const Tensor& t) { return call<Copy>({t}); }

Tensor in_memory_order(const Tensor& t, const std::vector<int64_t>& order,
                       const std::function<Tensor(const Tensor&)>& make) {
  LUCID_CHECK(int64_t(order.size()) == t.ndim(), "memory order of ", order.size(), " dims for a tensor of ", t.ndim());
  bool row_major = true;
  for (size_t i = 0; i < order.size(); ++i) row_major = row_major && order[i] == int64_t(i);
  if (row_major) return make(t);
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  Tensor out = permute(make(permute(t, order)), inverse);
  // The result is memory of its own, not a view of the permuted one.
  out.impl()->view_base = nullptr;
  return out;
}

Tensor preserve_layout(const Tensor& t, const std::function<Tensor(const Tensor&)>& make) {
  Tensor out = in_memory_order(t, memory_order(t.shape(), t.strides()), make);
  // A dense input's strides are kept exactly (they differ from the
  // result's only at size-1 dims, which address nothing).
  if (!out.same(t) && is_non_overlapping_and_dense(t.shape(), t.strides())) out.impl()->strides = t.strides();
  return out;
}

Tensor clone(const Tensor& t) { return preserve_layout(t, contiguous_copy); }

std::string DeviceCopy::name() const { return "to(" + to.str() + ")"; }
std::vector<TensorMeta> DeviceCopy::infer(const std::vector<TensorMeta>& in) const {
  return {{in[0].shape, in[0].dtype, to}};
}
std::vector<Tensor> DeviceCopy::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                    const std::vector<Tensor>& cot, const std::vector<int>&) const {
  return {to_device(cot[0], from)};
}

Tensor to_device(const Tensor& t, const Device& device) {
  if (t.device() == device) return t;
  const Tensor src = contiguous(t);
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  transfer_between_devices(out.raw_data("to(device)"), device, src.raw_data("to(device)"), t.device(), t.nbytes());
  // Differentiable, as PyTorch's .to(device): the gradient goes back to t's device.
  std::vector<Tensor> outs{out};
  autograd::record_history(std::make_shared<const DeviceCopy>(t.device(), device), {t}, outs);
  return outs[0];
}

// --------------------------------------------------------------- in-place
// uniform_value: every element receives the same value (fill_, zero_), which
// PyTorch allows into an expanded tensor (its elements sharing memory).
static void check_inplace_target(const Tensor& self, bool uniform_value = false) {
  LUCID_CHECK_T(Error, uniform_value || !has_internal_overlap(self.shape(), self.strides()),
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.");
  if (!autograd::GradMode::is_enabled()) return;
  if (!self.is_view()) {
    if (self.requires_grad() && self.is_leaf())
      fail<Error>("a leaf Variable that requires grad is being used in an in-place operation.");
    return;
  }
  const TensorImpl* base = self.impl()->view_base.get();
  if (!base->requires_grad) return;
  if (!self.impl()->view_in_grad_mode)
    fail<Error>("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
                "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both "
                "the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
                "tracked) or both outside (if you want the inplace to be tracked).");
  if (const char* fn = self.impl()->multi_output_view)
    fail<Error>("Output 0 of ", fn, " is a view and is being modified inplace. This view is the output of a function "
                "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
                "You should replace the inplace operation by an out-of-place one.");
  if (!base->grad_fn)
    fail<Error>("a view of a leaf Variable that requires grad is being used in an in-place operation.");
}

static Tensor& assign_impl(Tensor& self, const Tensor& value, bool uniform_value);

Tensor& assign_(Tensor& self, const Tensor& value) { return assign_impl(self, value, false); }

static Tensor& assign_impl(Tensor& self, const Tensor& value, bool uniform_value) {
  check_inplace_target(self, uniform_value);
  Tensor v = value;
  if (v.shape() != self.shape()) {
    LUCID_CHECK(broadcast_shapes(v.shape(), self.shape()) == self.shape(), "in-place: value of shape ",
                shape_str(v.shape()), " cannot be written into a tensor of shape ", shape_str(self.shape()));
    v = broadcast_to(v, self.shape());
  }
  v = cast(v, self.dtype());
  // A value aliasing self's buffer (x.copy_(x.reshape(...))) is copied first.
  if (!v.is_symbolic() && !self.is_symbolic() && v.storage() == self.storage()) v = clone(v);
  if (self.is_view() && autograd::GradMode::is_enabled()) {
    Tensor base(self.impl()->view_base);
    if (v.requires_grad() || base.requires_grad()) {
      // A write through a view rewrites the base's history (PyTorch's
      // CopySlices): the base's elements outside the view keep the old
      // history, the view's take v's; then self is a view of the new base.
      assign_data(self, v);
      std::vector<Tensor> outs{base};
      autograd::record_history(std::make_shared<const ViewScatter>(base.layout(), self.layout(), self.storage_numel()),
                               {base, v}, outs);
      autograd::rederive_view_history(self);
      return self;
    }
  }
  if (autograd::GradMode::is_enabled() && self.requires_grad()) {
    // self stays part of the graph (PyTorch's rule): its history becomes a
    // full overwrite, which passes zero gradient to the old value (and the
    // gradient to the new contents where they need one).
    SliceSpec full{std::vector<int64_t>(size_t(self.ndim()), 0), self.shape(),
                   std::vector<int64_t>(size_t(self.ndim()), 1)};
    v = detail::call<SliceScatter>({self, v}, full);
  }
  assign_data(self, v);
  if (autograd::GradMode::is_enabled() && v.requires_grad()) {
    self.impl()->requires_grad = true;
    if (v.grad_fn()) {
      autograd::set_history(self, v.grad_fn(), v.impl()->output_nr);
    } else {
      // v is a leaf: self's history is an identity from it.
      Tensor c = clone(v);
      autograd::set_history(self, c.grad_fn(), 0);
    }
  }
  return self;
}

Tensor& copy_(Tensor& self, const Tensor& src) { return assign_(self, to_device(src, self.device())); }
Tensor& fill_(Tensor& self, Scalar value) {
  detail::check_scalar_fits(value, self.dtype(), "fill_");
  return assign_impl(self, detail::wrapped_scalar_tensor(value, self.dtype(), self.device()), true);
}
Tensor& zero_(Tensor& self) { return fill_(self, 0.0); }

}  // namespace lucid
