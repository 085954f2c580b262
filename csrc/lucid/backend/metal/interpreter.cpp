#include "lucid/backend/metal/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lucid/core/error.h"

namespace lucid::metal {

namespace {

// A host tensor: floats as doubles rounded to their dtype after every
// operation, integers and bools as int64 wrapped to their width.
struct HostTensor {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;
  bool floating() const { return is_floating(dtype); }
  int64_t size() const { return numel(shape); }
  double get(int64_t k) const { return floating() ? f[size_t(k)] : double(i[size_t(k)]); }
};

template <class... Args>
[[noreturn]] void refuse(const PlanNode& n, const Args&... args) {
  fail<Error>("metal plan interpreter: ", mps_op_name(n.op), ": ", args...);
}

double round_to(DType t, double x) {
  switch (t) {
    case DType::Float32: return double(float(x));
    case DType::Float16: return double(half_to_float(float_to_half(float(x))));
    case DType::BFloat16: return double(bf16_to_float(float_to_bf16(float(x))));
    default: return x;
  }
}

int64_t wrap(DType t, int64_t x) {
  switch (t) {
    case DType::Int32: return int64_t(int32_t(uint32_t(uint64_t(x))));
    case DType::Bool: return x != 0;
    default: return x;
  }
}

HostTensor make(DType t, const Shape& s) {
  HostTensor h;
  h.dtype = t;
  h.shape = s;
  if (h.floating()) h.f.assign(size_t(numel(s)), 0.0);
  else h.i.assign(size_t(numel(s)), 0);
  return h;
}

HostTensor from_bytes(DType t, const Shape& s, const void* p) {
  HostTensor h = make(t, s);
  const int64_t n = h.size();
  for (int64_t k = 0; k < n; ++k) {
    switch (t) {
      case DType::Float32: h.f[size_t(k)] = static_cast<const float*>(p)[k]; break;
      case DType::Float16: h.f[size_t(k)] = half_to_float(static_cast<const uint16_t*>(p)[k]); break;
      case DType::BFloat16: h.f[size_t(k)] = bf16_to_float(static_cast<const uint16_t*>(p)[k]); break;
      case DType::UInt8: h.i[size_t(k)] = static_cast<const uint8_t*>(p)[k]; break;
      case DType::Int8: h.i[size_t(k)] = static_cast<const int8_t*>(p)[k]; break;
      case DType::Int16: h.i[size_t(k)] = static_cast<const int16_t*>(p)[k]; break;
      case DType::Int32: h.i[size_t(k)] = static_cast<const int32_t*>(p)[k]; break;
      case DType::Int64: h.i[size_t(k)] = static_cast<const int64_t*>(p)[k]; break;
      case DType::Bool: h.i[size_t(k)] = static_cast<const bool*>(p)[k] ? 1 : 0; break;
      case DType::Float64: fail<Error>("metal plan interpreter: float64 value");
    }
  }
  return h;
}

std::vector<unsigned char> to_bytes(const HostTensor& h) {
  std::vector<unsigned char> out(size_t(h.size()) * itemsize(h.dtype));
  void* p = out.data();
  for (int64_t k = 0; k < h.size(); ++k) {
    switch (h.dtype) {
      case DType::Float32: static_cast<float*>(p)[k] = float(h.f[size_t(k)]); break;
      case DType::Float16: static_cast<uint16_t*>(p)[k] = float_to_half(float(h.f[size_t(k)])); break;
      case DType::BFloat16: static_cast<uint16_t*>(p)[k] = float_to_bf16(float(h.f[size_t(k)])); break;
      case DType::UInt8: static_cast<uint8_t*>(p)[k] = uint8_t(h.i[size_t(k)]); break;
      case DType::Int8: static_cast<int8_t*>(p)[k] = int8_t(h.i[size_t(k)]); break;
      case DType::Int16: static_cast<int16_t*>(p)[k] = int16_t(h.i[size_t(k)]); break;
      case DType::Int32: static_cast<int32_t*>(p)[k] = int32_t(h.i[size_t(k)]); break;
      case DType::Int64: static_cast<int64_t*>(p)[k] = h.i[size_t(k)]; break;
      case DType::Bool: static_cast<bool*>(p)[k] = h.i[size_t(k)] != 0; break;
      case DType::Float64: break;
    }
  }
  return out;
}

// An integer-valued double as an integer of `t`, or a refusal.
int64_t exact_int(const PlanNode& n, DType t, double x, const char* what) {
  const double lo = double(integral_min(t)), hi = double(integral_max(t));
  if (!(x == std::trunc(x)) || x < lo || x >= hi + 1)
    refuse(n, what, " ", x, " is not exactly a ", dtype_name(t), " (MPSGraph's conversion of it is not documented)");
  return int64_t(x);
}

// Row-major unravelling, and strides that broadcast a shape to another.
std::vector<int64_t> unravel(int64_t k, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? k % s[d] : 0;
    k = s[d] ? k / s[d] : 0;
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t k = 0;
  for (size_t d = 0; d < s.size(); ++d) k = k * s[d] + idx[d];
  return k;
}
Shape broadcast_strides_to(const Shape& s, const Shape& out) {
  Shape st(out.size(), 0);
  const Shape cs = contiguous_strides(s);
  const size_t off = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) st[off + d] = s[d] == 1 ? 0 : cs[d];
  return st;
}
Shape broadcast_all(const PlanNode& n, const std::vector<const HostTensor*>& ts) {
  Shape out = ts[0]->shape;
  for (const HostTensor* t : ts) {
    const size_t r = std::max(out.size(), t->shape.size());
    Shape o(r, 1);
    for (size_t d = 0; d < r; ++d) {
      const int64_t a = d < r - out.size() ? 1 : out[d - (r - out.size())];
      const int64_t b = d < r - t->shape.size() ? 1 : t->shape[d - (r - t->shape.size())];
      if (a != b && a != 1 && b != 1) refuse(n, "shapes do not broadcast");
      o[d] = a == 1 ? b : a;
    }
    out = o;
  }
  return out;
}

// Elementwise map over broadcast operands.
template <class F>
HostTensor elementwise(const PlanNode& n, DType out_t, const std::vector<const HostTensor*>& ts, F&& f) {
  const Shape out = broadcast_all(n, ts);
  HostTensor r = make(out_t, out);
  std::vector<Shape> st;
  for (const HostTensor* t : ts) st.push_back(broadcast_strides_to(t->shape, out));
  const Shape os = contiguous_strides(out);
  std::vector<int64_t> off(ts.size());
  for (int64_t k = 0; k < r.size(); ++k) {
    for (size_t j = 0; j < ts.size(); ++j) {
      int64_t o = 0, rem = k;
      for (size_t d = 0; d < out.size(); ++d) {
        const int64_t c = os[d] ? rem / os[d] : 0;
        rem = os[d] ? rem % os[d] : 0;
        o += c * st[j][d];
      }
      off[j] = o;
    }
    f(r, k, off);
  }
  return r;
}

double fmod_floor(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

HostTensor unary(const PlanNode& n, const HostTensor& x, DType out_t) {
  HostTensor r = make(out_t, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    if (!x.floating()) {
      const int64_t v = x.i[size_t(k)];
      switch (n.op) {
        case MpsOp::Identity: r.i[size_t(k)] = v; break;
        case MpsOp::Abs: r.i[size_t(k)] = wrap(x.dtype, v < 0 ? int64_t(0 - uint64_t(v)) : v); break;
        case MpsOp::Neg: r.i[size_t(k)] = wrap(x.dtype, int64_t(0 - uint64_t(v))); break;
        case MpsOp::Not: r.i[size_t(k)] = !v; break;
        default: refuse(n, "integer operand");
      }
      continue;
    }
    const double v = x.f[size_t(k)];
    double y = 0;
    switch (n.op) {
      case MpsOp::Identity: y = v; break;
      case MpsOp::Exp: y = std::exp(v); break;
      case MpsOp::Log: y = std::log(v); break;
      case MpsOp::Sqrt: y = std::sqrt(v); break;
      case MpsOp::Abs: y = std::fabs(v); break;
      case MpsOp::Neg: y = -v; break;
      case MpsOp::Sin: y = std::sin(v); break;
      case MpsOp::Cos: y = std::cos(v); break;
      case MpsOp::Tanh: y = std::tanh(v); break;
      case MpsOp::Erf: y = std::erf(v); break;
      case MpsOp::Floor: y = std::floor(v); break;
      case MpsOp::Ceil: y = std::ceil(v); break;
      case MpsOp::Rint: y = std::nearbyint(v); break;
      case MpsOp::Trunc: y = std::trunc(v); break;
      case MpsOp::IsNaN: r.i[size_t(k)] = std::isnan(v); continue;
      case MpsOp::IsInf: r.i[size_t(k)] = std::isinf(v); continue;
      case MpsOp::IsFinite: r.i[size_t(k)] = std::isfinite(v); continue;
      case MpsOp::SignBit: r.i[size_t(k)] = std::signbit(v); continue;
      default: refuse(n, "not a unary operation");
    }
    r.f[size_t(k)] = round_to(out_t, y);
  }
  return r;
}

HostTensor binary(const PlanNode& n, const HostTensor& a, const HostTensor& b, DType out_t,
                  const InterpreterOptions& opt) {
  const DType t = a.dtype;
  return elementwise(n, out_t, {&a, &b}, [&](HostTensor& r, int64_t k, const std::vector<int64_t>& off) {
    if (is_floating(t)) {
      const double x = a.f[size_t(off[0])], y = b.f[size_t(off[1])];
      double z = 0;
      switch (n.op) {
        case MpsOp::Add: z = x + y; break;
        case MpsOp::Sub: z = x - y; break;
        case MpsOp::Mul: z = x * y; break;
        case MpsOp::Div: z = x / y; break;
        case MpsOp::Mod: z = opt.float_modulo_is_floor ? fmod_floor(x, y) : std::fmod(x, y); break;
        case MpsOp::FloorMod: z = fmod_floor(x, y); break;
        case MpsOp::Pow:
          if (x < 0) refuse(n, "a negative base (the plan passes |a|)");
          z = std::pow(x, y);
          break;
        case MpsOp::MinNaN: z = (std::isnan(x) || std::isnan(y)) ? NAN : std::min(x, y); break;
        case MpsOp::MaxNaN: z = (std::isnan(x) || std::isnan(y)) ? NAN : std::max(x, y); break;
        case MpsOp::Atan2: z = std::atan2(x, y); break;
        case MpsOp::Eq: r.i[size_t(k)] = x == y; return;
        case MpsOp::Ne: r.i[size_t(k)] = x != y; return;
        case MpsOp::Lt: r.i[size_t(k)] = x < y; return;
        case MpsOp::Le: r.i[size_t(k)] = x <= y; return;
        case MpsOp::Gt: r.i[size_t(k)] = x > y; return;
        case MpsOp::Ge: r.i[size_t(k)] = x >= y; return;
        default: refuse(n, "floating operands (NaN handling of this form is not documented)");
      }
      r.f[size_t(k)] = round_to(out_t, z);
      return;
    }
    const int64_t x = a.i[size_t(off[0])], y = b.i[size_t(off[1])];
    int64_t z = 0;
    switch (n.op) {
      case MpsOp::Add: z = int64_t(uint64_t(x) + uint64_t(y)); break;
      case MpsOp::Sub: z = int64_t(uint64_t(x) - uint64_t(y)); break;
      case MpsOp::Mul: z = int64_t(uint64_t(x) * uint64_t(y)); break;
      case MpsOp::Div:
        if (y == 0 || (y != -1 && x % y != 0))
          refuse(n, "inexact integer division ", x, " / ", y, " (its rounding is not documented)");
        z = y == -1 ? int64_t(0 - uint64_t(x)) : x / y;
        break;
      case MpsOp::FloorMod:
        if (y == 0) refuse(n, "integer modulo by zero");
        z = y == -1 ? 0 : x % y;
        if (z != 0 && ((z < 0) != (y < 0))) z += y;
        break;
      case MpsOp::Min: z = std::min(x, y); break;
      case MpsOp::Max: z = std::max(x, y); break;
      case MpsOp::Eq: z = x == y; break;
      case MpsOp::Ne: z = x != y; break;
      case MpsOp::Lt: z = x < y; break;
      case MpsOp::Le: z = x <= y; break;
      case MpsOp::Gt: z = x > y; break;
      case MpsOp::Ge: z = x >= y; break;
      case MpsOp::And: z = x && y; break;
      case MpsOp::Or: z = x || y; break;
      case MpsOp::Xor: z = (x != 0) != (y != 0); break;
      case MpsOp::BitAnd: z = x & y; break;
      case MpsOp::ShiftRight:
        if (y < 0 || y >= 64) refuse(n, "shift by ", y);
        z = x >> y;  // arithmetic; plans only shift non-negative values
        break;
      default: refuse(n, "integer operands");
    }
    r.i[size_t(k)] = wrap(out_t, z);
  });
}

HostTensor cast(const PlanNode& n, const HostTensor& x, DType to) {
  if (to == DType::Bool && x.dtype != DType::Bool) refuse(n, "a cast to bool (plans compare with zero instead)");
  HostTensor r = make(to, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    if (is_floating(to)) r.f[size_t(k)] = round_to(to, x.get(k));
    else if (x.floating()) r.i[size_t(k)] = exact_int(n, to, x.f[size_t(k)], "cast of");
    else if (wrap(to, x.i[size_t(k)]) != x.i[size_t(k)]) refuse(n, "narrowing cast of ", x.i[size_t(k)]);
    else r.i[size_t(k)] = x.i[size_t(k)];
  }
  return r;
}

HostTensor reduce(const PlanNode& n, const HostTensor& x, const InterpreterOptions& opt) {
  Shape kept = x.shape;
  for (int64_t a : n.a) kept[size_t(a)] = 1;
  HostTensor r = make(x.dtype, kept);
  const int64_t m = r.size();
  std::vector<double> acc(static_cast<size_t>(m));
  std::vector<int64_t> iacc(static_cast<size_t>(m));
  std::vector<int64_t> count(size_t(m), 0);
  for (int64_t k = 0; k < x.size(); ++k) {
    std::vector<int64_t> idx = unravel(k, x.shape);
    for (int64_t a : n.a) idx[size_t(a)] = 0;
    const size_t o = size_t(ravel(idx, kept));
    const bool first = count[o]++ == 0;
    if (x.floating()) {
      const double v = x.f[size_t(k)];
      double& s = acc[o];
      switch (n.op) {
        case MpsOp::ReduceSum: case MpsOp::Mean: s = first ? v : s + v; break;
        case MpsOp::ReduceProd: s = first ? v : s * v; break;
        // NaN-ignoring; the plans use these only where the result does not
        // depend on it (softmax's shift) and the NaN forms elsewhere.
        case MpsOp::ReduceMax: s = first || std::isnan(s) ? v : std::isnan(v) ? s : std::max(s, v); break;
        case MpsOp::ReduceMin: s = first || std::isnan(s) ? v : std::isnan(v) ? s : std::min(s, v); break;
        case MpsOp::ReduceMaxNaN: s = first ? v : (std::isnan(s) || std::isnan(v)) ? NAN : std::max(s, v); break;
        case MpsOp::ReduceMinNaN: s = first ? v : (std::isnan(s) || std::isnan(v)) ? NAN : std::min(s, v); break;
        default: refuse(n, "floating operand");
      }
    } else {
      const int64_t v = x.i[size_t(k)];
      int64_t& s = iacc[o];
      switch (n.op) {
        case MpsOp::ReduceSum: s = first ? v : int64_t(uint64_t(s) + uint64_t(v)); break;
        case MpsOp::ReduceProd: s = first ? v : int64_t(uint64_t(s) * uint64_t(v)); break;
        case MpsOp::ReduceMax: s = first ? v : std::max(s, v); break;
        case MpsOp::ReduceMin: s = first ? v : std::min(s, v); break;
        case MpsOp::ReduceAnd: s = first ? v : (s && v); break;
        case MpsOp::ReduceOr: s = first ? v : (s || v); break;
        default: refuse(n, "integer operand");
      }
    }
  }
  for (int64_t o = 0; o < m; ++o) {
    if (x.floating()) {
      double v = acc[size_t(o)];
      if (n.op == MpsOp::Mean) v /= double(count[size_t(o)]);
      r.f[size_t(o)] = round_to(x.dtype, v);
    } else {
      r.i[size_t(o)] = wrap(x.dtype, iacc[size_t(o)]);
    }
  }
  if (opt.reductions_drop_axes) {
    Shape dropped;
    for (size_t d = 0; d < kept.size(); ++d)
      if (std::find(n.a.begin(), n.a.end(), int64_t(d)) == n.a.end()) dropped.push_back(kept[d]);
    r.shape = dropped.empty() ? Shape{1} : dropped;
  }
  return r;
}

// Reads element `k` of `src` into element `j` of `dst` (same dtype).
void copy_elem(HostTensor& dst, int64_t j, const HostTensor& src, int64_t k) {
  if (dst.floating()) dst.f[size_t(j)] = src.f[size_t(k)];
  else dst.i[size_t(j)] = src.i[size_t(k)];
}

HostTensor permute(const HostTensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t d : perm) out.push_back(x.shape[size_t(d)]);
  HostTensor r = make(x.dtype, out);
  const Shape xs = contiguous_strides(x.shape);
  for (int64_t k = 0; k < r.size(); ++k) {
    const std::vector<int64_t> idx = unravel(k, out);
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d) src += idx[d] * xs[size_t(perm[d])];
    copy_elem(r, k, x, src);
  }
  return r;
}

int64_t index_at(const PlanNode& n, const HostTensor& idx, int64_t k, int64_t size, bool checked) {
  const int64_t v = idx.i[size_t(k)];
  if (checked && (v < 0 || v >= size)) refuse(n, "index ", v, " outside [0, ", size, ")");
  return v;
}

HostTensor scatter_along(const PlanNode& n, HostTensor r, const HostTensor& u, const HostTensor& idx) {
  const int64_t axis = n.axis;
  for (int64_t k = 0; k < u.size(); ++k) {
    std::vector<int64_t> p = unravel(k, u.shape);
    const int64_t v = index_at(n, idx, k, r.shape[size_t(axis)], false);
    if (v < 0 || v >= r.shape[size_t(axis)]) continue;  // skipped, as documented for out-of-range updates
    p[size_t(axis)] = v;
    const size_t o = size_t(ravel(p, r.shape));
    if (r.floating()) {
      const double x = u.f[size_t(k)];
      r.f[o] = round_to(r.dtype, n.mode == ScatterMode::Add ? r.f[o] + x : x);
    } else {
      const int64_t x = u.i[size_t(k)];
      r.i[o] = wrap(r.dtype, n.mode == ScatterMode::Add ? int64_t(uint64_t(r.i[o]) + uint64_t(x)) : x);
    }
  }
  return r;
}

std::vector<HostTensor> run_node(const PlanNode& n, const Plan& plan, const std::vector<HostTensor>& vals,
                                 const std::vector<const void*>& inputs, const InterpreterOptions& opt) {
  auto in = [&](size_t k) -> const HostTensor& { return vals[size_t(n.inputs[k])]; };
  const PlanValue& out = plan.values[size_t(n.outputs[0])];
  switch (n.op) {
    case MpsOp::Placeholder: {
      if (n.axis < 0 || size_t(n.axis) >= inputs.size()) refuse(n, "no input ", n.axis);
      return {from_bytes(out.dtype, out.shape, inputs[size_t(n.axis)])};
    }
    case MpsOp::Constant: {
      HostTensor r = make(out.dtype, n.a);
      if (r.floating()) std::fill(r.f.begin(), r.f.end(), round_to(out.dtype, n.scalar));
      else std::fill(r.i.begin(), r.i.end(), exact_int(n, out.dtype, n.scalar, "constant"));
      return {r};
    }
    case MpsOp::ConstantData: return {from_bytes(out.dtype, n.a, n.bytes.data())};
    case MpsOp::Cast: return {cast(n, in(0), out.dtype)};
    case MpsOp::Identity: case MpsOp::Exp: case MpsOp::Log: case MpsOp::Sqrt: case MpsOp::Abs: case MpsOp::Neg:
    case MpsOp::Sin: case MpsOp::Cos: case MpsOp::Tanh: case MpsOp::Erf: case MpsOp::Floor: case MpsOp::Ceil:
    case MpsOp::Rint: case MpsOp::Trunc: case MpsOp::Not: case MpsOp::IsNaN: case MpsOp::IsInf: case MpsOp::IsFinite:
    case MpsOp::SignBit:
      return {unary(n, in(0), out.dtype)};
    case MpsOp::Add: case MpsOp::Sub: case MpsOp::Mul: case MpsOp::Div: case MpsOp::Mod: case MpsOp::FloorMod:
    case MpsOp::Pow: case MpsOp::Min: case MpsOp::Max: case MpsOp::MinNaN: case MpsOp::MaxNaN: case MpsOp::Atan2:
    case MpsOp::Eq: case MpsOp::Ne: case MpsOp::Lt: case MpsOp::Le: case MpsOp::Gt: case MpsOp::Ge: case MpsOp::And:
    case MpsOp::Or: case MpsOp::Xor: case MpsOp::BitAnd: case MpsOp::ShiftRight:
      return {binary(n, in(0), in(1), out.dtype, opt)};
    case MpsOp::Select: {
      const HostTensor &c = in(0), &a = in(1), &b = in(2);
      return {elementwise(n, out.dtype, {&c, &a, &b}, [&](HostTensor& r, int64_t k, const std::vector<int64_t>& off) {
        copy_elem(r, k, c.i[size_t(off[0])] ? a : b, c.i[size_t(off[0])] ? off[1] : off[2]);
      })};
    }
    case MpsOp::ReduceSum: case MpsOp::ReduceProd: case MpsOp::ReduceMax: case MpsOp::ReduceMin:
    case MpsOp::ReduceMaxNaN: case MpsOp::ReduceMinNaN: case MpsOp::ReduceAnd: case MpsOp::ReduceOr: case MpsOp::Mean:
      return {reduce(n, in(0), opt)};
    case MpsOp::MatMul: {
      const HostTensor &a = in(0), &b = in(1);
      const size_t r = a.shape.size();
      const int64_t m = a.shape[r - 2], k = a.shape[r - 1], nn = b.shape[r - 1];
      Shape os(a.shape.begin(), a.shape.end() - 1);
      os.push_back(nn);
      HostTensor o = make(a.dtype, os);
      const int64_t batch = numel(Shape(a.shape.begin(), a.shape.end() - 2));
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < nn; ++j) {
            double s = 0;
            for (int64_t q = 0; q < k; ++q) s += a.get(bi * m * k + i * k + q) * b.get(bi * k * nn + q * nn + j);
            if (o.floating()) o.f[size_t(bi * m * nn + i * nn + j)] = round_to(o.dtype, s);
            else refuse(n, "integer operands (plans multiply integers elementwise)");
          }
      return {o};
    }
    case MpsOp::Reshape: {
      if (numel(n.a) != in(0).size()) refuse(n, "element count changes");
      HostTensor r = in(0);
      r.shape = n.a;
      return {r};
    }
    case MpsOp::Broadcast: {
      const HostTensor& x = in(0);
      HostTensor target = make(x.dtype, n.a);
      return {elementwise(n, x.dtype, {&x, &target},
                          [&](HostTensor& r, int64_t k, const std::vector<int64_t>& off) { copy_elem(r, k, x, off[0]); })};
    }
    case MpsOp::Transpose: {
      std::vector<int64_t> perm(in(0).shape.size());
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = int64_t(d);
      std::swap(perm[size_t(n.axis)], perm[size_t(n.axis2)]);
      return {permute(in(0), perm)};
    }
    case MpsOp::Permute: return {permute(in(0), n.a)};
    case MpsOp::Slice: {
      const HostTensor& x = in(0);
      HostTensor r = make(x.dtype, out.shape);
      for (int64_t k = 0; k < r.size(); ++k) {
        std::vector<int64_t> idx = unravel(k, out.shape);
        for (size_t d = 0; d < idx.size(); ++d) idx[d] = n.a[d] + idx[d] * n.c[d];
        copy_elem(r, k, x, ravel(idx, x.shape));
      }
      return {r};
    }
    case MpsOp::ShapeOf: {
      HostTensor r = make(DType::Int32, Shape{int64_t(in(0).shape.size())});
      for (size_t d = 0; d < in(0).shape.size(); ++d) r.i[d] = in(0).shape[d];
      return {r};
    }
    case MpsOp::SliceGradient: {
      const HostTensor &g = in(0), &s = in(1);
      Shape fwd(s.i.begin(), s.i.end());
      HostTensor r = make(g.dtype, fwd);
      for (int64_t k = 0; k < g.size(); ++k) {
        std::vector<int64_t> idx = unravel(k, g.shape);
        for (size_t d = 0; d < idx.size(); ++d) idx[d] = n.a[d] + idx[d] * n.c[d];
        copy_elem(r, ravel(idx, fwd), g, k);
      }
      return {r};
    }
    case MpsOp::Concat: {
      HostTensor r = make(out.dtype, out.shape);
      int64_t base = 0;
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const HostTensor& x = in(j);
        for (int64_t k = 0; k < x.size(); ++k) {
          std::vector<int64_t> idx = unravel(k, x.shape);
          idx[size_t(n.axis)] += base;
          copy_elem(r, ravel(idx, out.shape), x, k);
        }
        base += x.shape[size_t(n.axis)];
      }
      return {r};
    }
    case MpsOp::Pad: {
      const HostTensor& x = in(0);
      Shape s = x.shape;
      for (size_t d = 0; d < s.size(); ++d) s[d] += n.a[d] + n.b[d];
      HostTensor r = make(x.dtype, s);
      if (r.floating()) std::fill(r.f.begin(), r.f.end(), round_to(r.dtype, n.scalar));
      else std::fill(r.i.begin(), r.i.end(), exact_int(n, r.dtype, n.scalar, "padding value"));
      for (int64_t k = 0; k < x.size(); ++k) {
        std::vector<int64_t> idx = unravel(k, x.shape);
        for (size_t d = 0; d < idx.size(); ++d) idx[d] += n.a[d];
        copy_elem(r, ravel(idx, s), x, k);
      }
      return {r};
    }
    case MpsOp::Gather: {
      const HostTensor &u = in(0), &idx = in(1);
      const size_t axis = size_t(n.axis);
      HostTensor r = make(u.dtype, out.shape);
      const size_t ir = idx.shape.size();
      for (int64_t k = 0; k < r.size(); ++k) {
        const std::vector<int64_t> o = unravel(k, out.shape);
        std::vector<int64_t> src(o.begin(), o.begin() + axis);
        const int64_t ik = ravel(std::vector<int64_t>(o.begin() + axis, o.begin() + axis + ir), idx.shape);
        src.push_back(index_at(n, idx, ik, u.shape[axis], true));
        src.insert(src.end(), o.begin() + axis + ir, o.end());
        copy_elem(r, k, u, ravel(src, u.shape));
      }
      return {r};
    }
    case MpsOp::GatherAlongAxis: {
      const HostTensor &u = in(0), &idx = in(1);
      HostTensor r = make(u.dtype, idx.shape);
      for (int64_t k = 0; k < r.size(); ++k) {
        std::vector<int64_t> p = unravel(k, idx.shape);
        p[size_t(n.axis)] = index_at(n, idx, k, u.shape[size_t(n.axis)], true);
        copy_elem(r, k, u, ravel(p, u.shape));
      }
      return {r};
    }
    case MpsOp::Scatter: {
      HostTensor r = in(0);
      const HostTensor &u = in(1), &idx = in(2);
      for (int64_t k = 0; k < u.size(); ++k) {
        const int64_t o = index_at(n, idx, k, r.size(), true);
        if (r.floating()) r.f[size_t(o)] = round_to(r.dtype, n.mode == ScatterMode::Add ? r.f[size_t(o)] + u.f[size_t(k)] : u.f[size_t(k)]);
        else r.i[size_t(o)] = n.mode == ScatterMode::Add ? wrap(r.dtype, r.i[size_t(o)] + u.i[size_t(k)]) : u.i[size_t(k)];
      }
      return {r};
    }
    case MpsOp::ScatterAlongAxis: return {scatter_along(n, in(0), in(1), in(2))};
    case MpsOp::ScatterAlongAxisInto: return {scatter_along(n, make(out.dtype, n.a), in(0), in(1))};
    case MpsOp::MaxPool2dWithIndices: {
      // The CPU's definition, assumed for MPSGraph (its pages do not say):
      // padding never wins, the first maximum wins ties, a NaN wins at its
      // first position; indices flattened over the input's H*W.
      const HostTensor& x = in(0);
      const PoolWindow& w = n.window;
      const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
      const Shape os = plan.values[size_t(n.outputs[0])].shape;
      HostTensor values = make(x.dtype, os), indices = make(DType::Int32, os);
      for (int64_t b = 0; b < N * C; ++b)
        for (int64_t oy = 0; oy < os[2]; ++oy)
          for (int64_t ox = 0; ox < os[3]; ++ox) {
            double best = -INFINITY;
            int64_t at = -1;
            for (int64_t i = 0; i < w.kh; ++i)
              for (int64_t j = 0; j < w.kw; ++j) {
                const int64_t y = oy * w.sh - w.pad_top + i * w.dh, xx = ox * w.sw - w.pad_left + j * w.dw;
                if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                const double v = x.f[size_t(b * H * W + y * W + xx)];
                if (at < 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
                  best = v;
                  at = y * W + xx;
                }
              }
            if (at < 0) refuse(n, "a window over padding only");
            const size_t o = size_t((b * os[2] + oy) * os[3] + ox);
            values.f[o] = best;
            indices.i[o] = at;
          }
      return {values, indices};
    }
    case MpsOp::MaxPool2dGradient: {
      const HostTensor &g = in(0), &idx = in(1);
      HostTensor r = make(g.dtype, n.a);
      const int64_t plane = n.a[2] * n.a[3], gplane = g.shape[2] * g.shape[3];
      for (int64_t k = 0; k < g.size(); ++k) {
        const int64_t b = k / gplane;
        const int64_t at = index_at(n, idx, k, plane, true);
        double& s = r.f[size_t(b * plane + at)];
        s = round_to(r.dtype, s + g.f[size_t(k)]);
      }
      return {r};
    }
    case MpsOp::Conv2d: case MpsOp::Conv2dDataGradient: case MpsOp::Conv2dWeightsGradient: {
      // One definition of the convolution, read three ways: y[n, o, p] =
      // sum over c in o's group and taps t of x[n, c, p * stride - pad + t *
      // dilation] w[o, c, t], and the gradients of sum(g * y) with respect
      // to x and to w. Sums in double, rounded once.
      const PoolWindow& w = n.window;
      const bool fwd = n.op == MpsOp::Conv2d, data = n.op == MpsOp::Conv2dDataGradient;
      const Shape xs = fwd ? in(0).shape : data ? n.a : in(1).shape;
      const Shape ws = fwd ? in(1).shape : data ? in(1).shape : n.a;
      const Shape ys = fwd ? plan.values[size_t(n.outputs[0])].shape : in(0).shape;
      const HostTensor& a = in(0);  // x (forward) or the incoming gradient
      const HostTensor& b = in(1);  // the weights, or the source (weights gradient)
      const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], cg = ws[1], og = O / w.groups;
      std::vector<double> r(size_t(numel(fwd ? ys : data ? xs : ws)), 0.0);
      for (int64_t b0 = 0; b0 < N; ++b0)
        for (int64_t o = 0; o < O; ++o)
          for (int64_t oy = 0; oy < ys[2]; ++oy)
            for (int64_t ox = 0; ox < ys[3]; ++ox) {
              const int64_t yi = ((b0 * O + o) * ys[2] + oy) * ys[3] + ox;
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t i = 0; i < w.kh; ++i)
                  for (int64_t j = 0; j < w.kw; ++j) {
                    const int64_t y = oy * w.sh - w.pad_top + i * w.dh, x = ox * w.sw - w.pad_left + j * w.dw;
                    if (y < 0 || y >= H || x < 0 || x >= W) continue;
                    const int64_t xi = ((b0 * C + o / og * cg + c) * H + y) * W + x;
                    const int64_t wi = ((o * cg + c) * w.kh + i) * w.kw + j;
                    if (fwd) r[size_t(yi)] += a.f[size_t(xi)] * b.f[size_t(wi)];
                    else if (data) r[size_t(xi)] += a.f[size_t(yi)] * b.f[size_t(wi)];
                    else r[size_t(wi)] += a.f[size_t(yi)] * b.f[size_t(xi)];
                  }
            }
      HostTensor out = make(a.dtype, fwd ? ys : data ? xs : ws);
      for (size_t k = 0; k < r.size(); ++k) out.f[k] = round_to(out.dtype, r[k]);
      return {out};
    }
    case MpsOp::Count: break;
  }
  refuse(n, "unknown operation");
}

bool is_reduction(MpsOp op) {
  switch (op) {
    case MpsOp::ReduceSum: case MpsOp::ReduceProd: case MpsOp::ReduceMax: case MpsOp::ReduceMin:
    case MpsOp::ReduceMaxNaN: case MpsOp::ReduceMinNaN: case MpsOp::ReduceAnd: case MpsOp::ReduceOr: case MpsOp::Mean:
      return true;
    default: return false;
  }
}

}  // namespace

std::vector<std::vector<unsigned char>> interpret(const Plan& plan, const std::vector<const void*>& inputs,
                                                  const InterpreterOptions& options) {
  LUCID_CHECK_T(Error, inputs.size() == plan.inputs.size(), "metal plan interpreter: ", plan.inputs.size(),
                " inputs expected, got ", inputs.size());
  std::vector<HostTensor> vals(plan.values.size());
  for (const PlanNode& n : plan.nodes) {
    std::vector<HostTensor> outs = run_node(n, plan, vals, inputs, options);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const PlanValue& want = plan.values[size_t(n.outputs[k])];
      // The values computed here must have the shape and dtype the plan
      // inferred: the builder's rules and these semantics agree.
      const bool shape_free = options.reductions_drop_axes && is_reduction(n.op);
      if (outs[k].dtype != want.dtype || (!shape_free && outs[k].shape != want.shape))
        refuse(n, "computed ", dtype_name(outs[k].dtype), shape_str(outs[k].shape), ", the plan says ",
               dtype_name(want.dtype), shape_str(want.shape));
      vals[size_t(n.outputs[k])] = std::move(outs[k]);
    }
  }
  std::vector<std::vector<unsigned char>> results;
  for (int t : plan.targets) results.push_back(to_bytes(vals[size_t(t)]));
  return results;
}

}  // namespace lucid::metal
