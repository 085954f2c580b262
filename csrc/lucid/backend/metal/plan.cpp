#include "lucid/backend/metal/plan.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "lucid/core/error.h"

namespace lucid::metal {

namespace {

struct OpInfo {
  const char* name;
  const char* selector;
};

const OpInfo kOps[] = {
#define LUCID_MPS_OP_INFO(name, selector) {#name, selector},
    LUCID_MPS_OPS(LUCID_MPS_OP_INFO)
#undef LUCID_MPS_OP_INFO
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == size_t(MpsOp::Count), "one entry per MpsOp");

template <class... Args>
[[noreturn]] void plan_error(MpsOp op, const Args&... args) {
  fail<Error>("metal plan: ", mps_op_name(op), ": ", args...);
}

bool is_float_plan(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }
bool is_int_plan(DType t) { return t == DType::Int32 || t == DType::Int64; }

// Which operand dtypes an elementwise op accepts, and what it returns.
DType unary_result(MpsOp op, DType t) {
  switch (op) {
    case MpsOp::Identity: return t;
    case MpsOp::Abs: case MpsOp::Neg:
      if (t == DType::Bool) plan_error(op, "needs a numeric operand, got bool");
      return t;
    case MpsOp::Not:
      if (t != DType::Bool) plan_error(op, "needs a bool operand, got ", dtype_name(t));
      return DType::Bool;
    case MpsOp::IsNaN: case MpsOp::IsInf: case MpsOp::IsFinite: case MpsOp::SignBit:
      if (!is_float_plan(t)) plan_error(op, "needs a floating operand, got ", dtype_name(t));
      return DType::Bool;
    default:
      if (!is_float_plan(t)) plan_error(op, "needs a floating operand, got ", dtype_name(t));
      return t;
  }
}

DType binary_result(MpsOp op, DType t) {
  switch (op) {
    case MpsOp::Eq: case MpsOp::Ne: case MpsOp::Lt: case MpsOp::Le: case MpsOp::Gt: case MpsOp::Ge:
      if (t == DType::Bool && op != MpsOp::Eq && op != MpsOp::Ne) plan_error(op, "orders bool operands");
      return DType::Bool;
    case MpsOp::And: case MpsOp::Or: case MpsOp::Xor:
      if (t != DType::Bool) plan_error(op, "needs bool operands, got ", dtype_name(t));
      return DType::Bool;
    case MpsOp::BitAnd: case MpsOp::ShiftRight:
      if (!is_integral(t)) plan_error(op, "needs integer operands, got ", dtype_name(t));
      return t;
    case MpsOp::MinNaN: case MpsOp::MaxNaN: case MpsOp::Atan2: case MpsOp::Pow:
      if (!is_float_plan(t)) plan_error(op, "needs floating operands, got ", dtype_name(t));
      return t;
    case MpsOp::Add: case MpsOp::Sub: case MpsOp::Mul: case MpsOp::Div: case MpsOp::Mod: case MpsOp::FloorMod:
    case MpsOp::Min: case MpsOp::Max:
      if (t == DType::Bool) plan_error(op, "needs numeric operands, got bool");
      return t;
    default: plan_error(op, "is not a binary operation");
  }
}

Shape broadcast_or_fail(MpsOp op, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) plan_error(op, "shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t checked_axis(MpsOp op, int64_t axis, size_t rank) {
  if (axis < 0 || axis >= int64_t(rank)) plan_error(op, "axis ", axis, " out of range for rank ", rank);
  return axis;
}

template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void put_list(std::string& s, const std::vector<int64_t>& v) {
  put(s, uint32_t(v.size()));
  for (int64_t x : v) put(s, x);
}
void put_ids(std::string& s, const std::vector<int>& v) {
  put(s, uint32_t(v.size()));
  for (int x : v) put(s, int32_t(x));
}

}  // namespace

const char* mps_op_name(MpsOp op) { return op < MpsOp::Count ? kOps[size_t(op)].name : "?"; }
const char* mps_op_selector(MpsOp op) { return op < MpsOp::Count ? kOps[size_t(op)].selector : "?"; }

Shape graph_shape(const Shape& s) { return s.empty() ? Shape{1} : s; }

std::string Plan::key() const {
  std::string s;
  put(s, uint32_t(values.size()));
  for (const auto& v : values) {
    put(s, uint8_t(v.dtype));
    put_list(s, v.shape);
  }
  put(s, uint32_t(nodes.size()));
  for (const auto& n : nodes) {
    put(s, uint8_t(n.op));
    put_ids(s, n.inputs);
    put_ids(s, n.outputs);
    put_list(s, n.a);
    put_list(s, n.b);
    put_list(s, n.c);
    put(s, n.axis);
    put(s, n.axis2);
    put(s, n.scalar);  // the bits: -0.0 and NaN payloads stay distinct
    put(s, uint8_t(n.mode));
    put(s, n.window);
    put(s, uint64_t(n.bytes.size()));
    s.append(reinterpret_cast<const char*>(n.bytes.data()), n.bytes.size());
  }
  put_ids(s, inputs);
  put_ids(s, targets);
  return s;
}

std::string Plan::dump() const {
  std::ostringstream os;
  for (const auto& n : nodes) {
    for (size_t k = 0; k < n.outputs.size(); ++k)
      os << (k ? ", " : "") << '%' << n.outputs[k] << ':' << dtype_name(values[n.outputs[k]].dtype)
         << shape_str(values[n.outputs[k]].shape);
    os << " = " << mps_op_name(n.op) << '(';
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << '%' << n.inputs[k];
    os << ")\n";
  }
  os << "inputs:";
  for (int v : inputs) os << " %" << v;
  os << "\ntargets:";
  for (int v : targets) os << " %" << v;
  os << '\n';
  return os.str();
}

const PlanValue& PlanBuilder::value(V v) const {
  LUCID_CHECK_T(Error, v >= 0 && size_t(v) < p_.values.size(), "metal plan: no value %", v);
  return p_.values[size_t(v)];
}

PlanBuilder::V PlanBuilder::add_value(DType t, Shape shape) {
  LUCID_CHECK_T(Error, t != DType::Float64, "metal plan: MPSGraph has no float64 values");
  LUCID_CHECK_T(Error, !shape.empty(), "metal plan: values have rank >= 1 (0-d tensors are [1])");
  p_.values.push_back({t, std::move(shape)});
  return int(p_.values.size()) - 1;
}

PlanNode& PlanBuilder::add_node(MpsOp op, std::vector<int> inputs, std::vector<V> outputs) {
  for (int v : inputs) value(v);
  PlanNode n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  p_.nodes.push_back(std::move(n));
  return p_.nodes.back();
}

PlanBuilder::V PlanBuilder::op1(MpsOp op, std::vector<int> inputs, DType t, Shape shape) {
  for (int64_t d : shape)
    if (d < 0) plan_error(op, "negative extent in ", shape_str(shape));
  V out = add_value(t, std::move(shape));
  add_node(op, std::move(inputs), {out});
  return out;
}

PlanBuilder::V PlanBuilder::placeholder(DType t, const Shape& shape) {
  V v = op1(MpsOp::Placeholder, {}, t, graph_shape(shape));
  p_.nodes.back().axis = int64_t(p_.inputs.size());
  p_.inputs.push_back(v);
  return v;
}

void PlanBuilder::target(V v) {
  value(v);
  // Targets are distinct operations that are not placeholders.
  if (std::find(p_.inputs.begin(), p_.inputs.end(), v) != p_.inputs.end() ||
      std::find(p_.targets.begin(), p_.targets.end(), v) != p_.targets.end())
    v = identity(v);
  p_.targets.push_back(v);
}

PlanBuilder::V PlanBuilder::scalar(double v, DType t) { return full(v, t, Shape{1}); }

PlanBuilder::V PlanBuilder::full(double v, DType t, const Shape& shape) {
  V out = op1(MpsOp::Constant, {}, t, graph_shape(shape));
  p_.nodes.back().scalar = v;
  p_.nodes.back().a = value(out).shape;
  return out;
}

PlanBuilder::V PlanBuilder::data(const void* bytes, size_t nbytes, const Shape& shape, DType t) {
  const Shape s = graph_shape(shape);
  if (nbytes != size_t(numel(s)) * itemsize(t))
    plan_error(MpsOp::ConstantData, nbytes, " bytes for ", shape_str(s), " of ", dtype_name(t));
  V out = op1(MpsOp::ConstantData, {}, t, s);
  PlanNode& n = p_.nodes.back();
  n.a = s;
  n.bytes.assign(static_cast<const unsigned char*>(bytes), static_cast<const unsigned char*>(bytes) + nbytes);
  return out;
}

PlanBuilder::V PlanBuilder::cast(V x, DType t) {
  if (dtype(x) == t) return x;
  return op1(MpsOp::Cast, {x}, t, shape(x));
}

PlanBuilder::V PlanBuilder::identity(V x) { return op1(MpsOp::Identity, {x}, dtype(x), shape(x)); }

PlanBuilder::V PlanBuilder::unary(MpsOp op, V x) { return op1(op, {x}, unary_result(op, dtype(x)), shape(x)); }

PlanBuilder::V PlanBuilder::binary(MpsOp op, V a, V b) {
  if (dtype(a) != dtype(b))
    plan_error(op, "operands of different dtypes (", dtype_name(dtype(a)), ", ", dtype_name(dtype(b)), ")");
  return op1(op, {a, b}, binary_result(op, dtype(a)), broadcast_or_fail(op, shape(a), shape(b)));
}

PlanBuilder::V PlanBuilder::select(V cond, V a, V b) {
  if (dtype(cond) != DType::Bool) plan_error(MpsOp::Select, "predicate of dtype ", dtype_name(dtype(cond)));
  if (dtype(a) != dtype(b)) plan_error(MpsOp::Select, "branches of different dtypes");
  Shape s = broadcast_or_fail(MpsOp::Select, broadcast_or_fail(MpsOp::Select, shape(cond), shape(a)), shape(b));
  return op1(MpsOp::Select, {cond, a, b}, dtype(a), std::move(s));
}

PlanBuilder::V PlanBuilder::reduce(MpsOp op, V x, const std::vector<int64_t>& axes) {
  const DType t = dtype(x);
  switch (op) {
    case MpsOp::ReduceAnd: case MpsOp::ReduceOr:
      if (t != DType::Bool) plan_error(op, "needs bool, got ", dtype_name(t));
      break;
    case MpsOp::ReduceMaxNaN: case MpsOp::ReduceMinNaN: case MpsOp::Mean:
      if (!is_float_plan(t)) plan_error(op, "needs a floating operand, got ", dtype_name(t));
      break;
    case MpsOp::ReduceSum: case MpsOp::ReduceProd: case MpsOp::ReduceMax: case MpsOp::ReduceMin:
      if (t == DType::Bool) plan_error(op, "needs a numeric operand, got bool");
      break;
    default: plan_error(op, "is not a reduction");
  }
  Shape kept = shape(x);
  for (int64_t a : axes) {
    checked_axis(op, a, kept.size());
    if (kept[size_t(a)] == 0) plan_error(op, "reduces an empty axis");
    if (std::count(axes.begin(), axes.end(), a) > 1) plan_error(op, "axis ", a, " given twice");
    kept[size_t(a)] = 1;
  }
  V r = op1(op, {x}, t, kept);
  p_.nodes.back().a = axes;
  return reshape(r, kept);
}

PlanBuilder::V PlanBuilder::matmul(V a, V b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  if (dtype(a) != dtype(b)) plan_error(MpsOp::MatMul, "operands of different dtypes");
  if (sa.size() < 2 || sa.size() != sb.size()) plan_error(MpsOp::MatMul, "ranks ", sa.size(), " and ", sb.size());
  const size_t n = sa.size();
  if (!std::equal(sa.begin(), sa.end() - 2, sb.begin())) plan_error(MpsOp::MatMul, "batch dims differ");
  if (sa[n - 1] != sb[n - 2]) plan_error(MpsOp::MatMul, "inner dims ", shape_str(sa), " x ", shape_str(sb));
  Shape out(sa.begin(), sa.end() - 1);
  out.push_back(sb[n - 1]);
  return op1(MpsOp::MatMul, {a, b}, dtype(a), std::move(out));
}

PlanBuilder::V PlanBuilder::reshape(V x, const Shape& s) {
  const Shape want = graph_shape(s);
  if (numel(want) != numel(shape(x)))
    plan_error(MpsOp::Reshape, shape_str(shape(x)), " to ", shape_str(want), " changes the element count");
  V out = op1(MpsOp::Reshape, {x}, dtype(x), want);
  p_.nodes.back().a = want;
  return out;
}

PlanBuilder::V PlanBuilder::broadcast(V x, const Shape& s) {
  const Shape want = graph_shape(s);
  if (broadcast_or_fail(MpsOp::Broadcast, shape(x), want) != want)
    plan_error(MpsOp::Broadcast, shape_str(shape(x)), " does not broadcast to ", shape_str(want));
  V out = op1(MpsOp::Broadcast, {x}, dtype(x), want);
  p_.nodes.back().a = want;
  return out;
}

PlanBuilder::V PlanBuilder::transpose(V x, int64_t d0, int64_t d1) {
  Shape s = shape(x);
  checked_axis(MpsOp::Transpose, d0, s.size());
  checked_axis(MpsOp::Transpose, d1, s.size());
  std::swap(s[size_t(d0)], s[size_t(d1)]);
  V out = op1(MpsOp::Transpose, {x}, dtype(x), std::move(s));
  p_.nodes.back().axis = d0;
  p_.nodes.back().axis2 = d1;
  return out;
}

PlanBuilder::V PlanBuilder::permute(V x, const std::vector<int64_t>& perm) {
  const Shape& in = shape(x);
  if (perm.size() != in.size()) plan_error(MpsOp::Permute, "permutation of length ", perm.size(), " for rank ", in.size());
  Shape out;
  for (int64_t d : perm) {
    checked_axis(MpsOp::Permute, d, in.size());
    if (std::count(perm.begin(), perm.end(), d) != 1) plan_error(MpsOp::Permute, "not a permutation");
    out.push_back(in[size_t(d)]);
  }
  V r = op1(MpsOp::Permute, {x}, dtype(x), std::move(out));
  p_.nodes.back().a = perm;
  return r;
}

namespace {
Shape slice_shape(MpsOp op, const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                  const std::vector<int64_t>& strides) {
  if (starts.size() != in.size() || ends.size() != in.size() || strides.size() != in.size())
    plan_error(op, "one start, end and stride per dimension");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (strides[d] <= 0 || starts[d] < 0 || starts[d] > ends[d] || ends[d] > in[d])
      plan_error(op, "slice [", starts[d], ":", ends[d], ":", strides[d], "] of extent ", in[d]);
    out.push_back((ends[d] - starts[d] + strides[d] - 1) / strides[d]);
  }
  return out;
}
}  // namespace

PlanBuilder::V PlanBuilder::slice(V x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                  const std::vector<int64_t>& strides) {
  V out = op1(MpsOp::Slice, {x}, dtype(x), slice_shape(MpsOp::Slice, shape(x), starts, ends, strides));
  PlanNode& n = p_.nodes.back();
  n.a = starts;
  n.b = ends;
  n.c = strides;
  return out;
}

PlanBuilder::V PlanBuilder::shape_of(V x) {
  return op1(MpsOp::ShapeOf, {x}, DType::Int32, Shape{int64_t(shape(x).size())});
}

PlanBuilder::V PlanBuilder::slice_gradient(V grad, V shape_tensor, const std::vector<int64_t>& starts,
                                           const std::vector<int64_t>& ends, const std::vector<int64_t>& strides) {
  // The forward shape is static: it is the shape of the tensor shape_of() read.
  const PlanNode* producer = nullptr;
  for (const auto& n : p_.nodes)
    if (!n.outputs.empty() && n.outputs[0] == shape_tensor) producer = &n;
  if (!producer || producer->op != MpsOp::ShapeOf) plan_error(MpsOp::SliceGradient, "the shape must come from ShapeOf");
  const Shape fwd = shape(producer->inputs[0]);
  if (slice_shape(MpsOp::SliceGradient, fwd, starts, ends, strides) != shape(grad))
    plan_error(MpsOp::SliceGradient, "gradient ", shape_str(shape(grad)), " does not match the slice of ", shape_str(fwd));
  V out = op1(MpsOp::SliceGradient, {grad, shape_tensor}, dtype(grad), fwd);
  PlanNode& n = p_.nodes.back();
  n.a = starts;
  n.b = ends;
  n.c = strides;
  return out;
}

PlanBuilder::V PlanBuilder::concat(const std::vector<V>& parts, int64_t axis) {
  if (parts.empty()) plan_error(MpsOp::Concat, "no operands");
  Shape out = shape(parts[0]);
  checked_axis(MpsOp::Concat, axis, out.size());
  out[size_t(axis)] = 0;
  for (V v : parts) {
    const Shape& s = shape(v);
    if (dtype(v) != dtype(parts[0]) || s.size() != out.size()) plan_error(MpsOp::Concat, "operands differ in dtype or rank");
    for (size_t d = 0; d < s.size(); ++d)
      if (int64_t(d) != axis && s[d] != out[d]) plan_error(MpsOp::Concat, "operands differ outside the axis");
    out[size_t(axis)] += s[size_t(axis)];
  }
  V r = op1(MpsOp::Concat, parts, dtype(parts[0]), std::move(out));
  p_.nodes.back().axis = axis;
  return r;
}

PlanBuilder::V PlanBuilder::pad(V x, const std::vector<int64_t>& left, const std::vector<int64_t>& right,
                                double value) {
  Shape s = shape(x);
  if (left.size() != s.size() || right.size() != s.size()) plan_error(MpsOp::Pad, "one padding per dimension");
  for (size_t d = 0; d < s.size(); ++d) {
    if (left[d] < 0 || right[d] < 0) plan_error(MpsOp::Pad, "negative padding");
    s[d] += left[d] + right[d];
  }
  V out = op1(MpsOp::Pad, {x}, dtype(x), std::move(s));
  PlanNode& n = p_.nodes.back();
  n.a = left;
  n.b = right;
  n.scalar = value;
  return out;
}

PlanBuilder::V PlanBuilder::gather(V updates, V indices, int64_t axis) {
  const Shape& u = shape(updates);
  checked_axis(MpsOp::Gather, axis, u.size());
  if (!is_int_plan(dtype(indices))) plan_error(MpsOp::Gather, "indices of dtype ", dtype_name(dtype(indices)));
  Shape out(u.begin(), u.begin() + axis);
  out.insert(out.end(), shape(indices).begin(), shape(indices).end());
  out.insert(out.end(), u.begin() + axis + 1, u.end());
  V r = op1(MpsOp::Gather, {updates, indices}, dtype(updates), std::move(out));
  p_.nodes.back().axis = axis;
  return r;
}

PlanBuilder::V PlanBuilder::gather_along_axis(V updates, V indices, int64_t axis) {
  const Shape& u = shape(updates);
  const Shape& i = shape(indices);
  checked_axis(MpsOp::GatherAlongAxis, axis, u.size());
  if (!is_int_plan(dtype(indices))) plan_error(MpsOp::GatherAlongAxis, "indices of dtype ", dtype_name(dtype(indices)));
  if (i.size() != u.size()) plan_error(MpsOp::GatherAlongAxis, "indices of rank ", i.size(), " for rank ", u.size());
  for (size_t d = 0; d < u.size(); ++d)
    if (int64_t(d) != axis && i[d] != u[d])
      plan_error(MpsOp::GatherAlongAxis, "indices ", shape_str(i), " differ from ", shape_str(u), " outside the axis");
  V r = op1(MpsOp::GatherAlongAxis, {updates, indices}, dtype(updates), i);
  p_.nodes.back().axis = axis;
  return r;
}

PlanBuilder::V PlanBuilder::scatter(V data, V updates, V indices, int64_t axis, ScatterMode mode) {
  const Shape& d = shape(data);
  if (d.size() != 1 || axis != 0 || shape(updates).size() != 1 || shape(indices) != shape(updates))
    plan_error(MpsOp::Scatter, "only 1-D scatters are planned (data ", shape_str(d), ", updates ",
               shape_str(shape(updates)), ", indices ", shape_str(shape(indices)), ")");
  if (dtype(data) != dtype(updates)) plan_error(MpsOp::Scatter, "data and updates of different dtypes");
  if (!is_int_plan(dtype(indices))) plan_error(MpsOp::Scatter, "indices of dtype ", dtype_name(dtype(indices)));
  V r = op1(MpsOp::Scatter, {data, updates, indices}, dtype(data), d);
  p_.nodes.back().axis = axis;
  p_.nodes.back().mode = mode;
  return r;
}

namespace {
void check_scatter_along_axis(MpsOp op, const Shape& data, DType dt, const Shape& u, DType ut, const Shape& i,
                              DType it, int64_t axis) {
  checked_axis(op, axis, data.size());
  if (dt != ut) plan_error(op, "data and updates of different dtypes");
  if (!is_int_plan(it)) plan_error(op, "indices of dtype ", dtype_name(it));
  if (i != u) plan_error(op, "indices ", shape_str(i), " and updates ", shape_str(u), " differ");
  if (u.size() != data.size()) plan_error(op, "updates of rank ", u.size(), " for rank ", data.size());
  for (size_t d = 0; d < u.size(); ++d)
    if (int64_t(d) != axis && u[d] != data[d])
      plan_error(op, "updates ", shape_str(u), " differ from ", shape_str(data), " outside the axis");
}
}  // namespace

PlanBuilder::V PlanBuilder::scatter_along_axis(V data, V updates, V indices, int64_t axis, ScatterMode mode) {
  check_scatter_along_axis(MpsOp::ScatterAlongAxis, shape(data), dtype(data), shape(updates), dtype(updates),
                           shape(indices), dtype(indices), axis);
  V r = op1(MpsOp::ScatterAlongAxis, {data, updates, indices}, dtype(data), shape(data));
  p_.nodes.back().axis = axis;
  p_.nodes.back().mode = mode;
  return r;
}

PlanBuilder::V PlanBuilder::scatter_along_axis_into(const Shape& shape_, DType t, V updates, V indices, int64_t axis,
                                                    ScatterMode mode) {
  const Shape s = graph_shape(shape_);
  check_scatter_along_axis(MpsOp::ScatterAlongAxisInto, s, t, shape(updates), dtype(updates), shape(indices),
                           dtype(indices), axis);
  V r = op1(MpsOp::ScatterAlongAxisInto, {updates, indices}, t, s);
  PlanNode& n = p_.nodes.back();
  n.a = s;
  n.axis = axis;
  n.mode = mode;
  return r;
}

namespace {
int64_t pooled_extent(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t lo, int64_t hi) {
  return (in + lo + hi - dil * (k - 1) - 1) / stride + 1;
}
}  // namespace

std::pair<PlanBuilder::V, PlanBuilder::V> PlanBuilder::max_pool2d_with_indices(V x, const PoolWindow& w) {
  const Shape& s = shape(x);
  if (s.size() != 4) plan_error(MpsOp::MaxPool2dWithIndices, "NCHW input of rank ", s.size());
  if (!is_float_plan(dtype(x))) plan_error(MpsOp::MaxPool2dWithIndices, "needs a floating input");
  const Shape out{s[0], s[1], pooled_extent(s[2], w.kh, w.sh, w.dh, w.pad_top, w.pad_bottom),
                  pooled_extent(s[3], w.kw, w.sw, w.dw, w.pad_left, w.pad_right)};
  if (out[2] <= 0 || out[3] <= 0) plan_error(MpsOp::MaxPool2dWithIndices, "window larger than the padded input");
  V values = add_value(dtype(x), out);
  V indices = add_value(DType::Int32, out);
  add_node(MpsOp::MaxPool2dWithIndices, {x}, {values, indices}).window = w;
  return {values, indices};
}

PlanBuilder::V PlanBuilder::max_pool2d_gradient(V grad, V indices, const Shape& out_shape, const PoolWindow& w) {
  if (shape(grad) != shape(indices) || shape(grad).size() != 4 || out_shape.size() != 4)
    plan_error(MpsOp::MaxPool2dGradient, "gradient and indices of one NCHW shape");
  if (dtype(indices) != DType::Int32) plan_error(MpsOp::MaxPool2dGradient, "int32 indices");
  V r = op1(MpsOp::MaxPool2dGradient, {grad, indices}, dtype(grad), out_shape);
  p_.nodes.back().a = out_shape;
  p_.nodes.back().window = w;
  return r;
}

namespace {
// The output extent of a convolution over `in` (MPSGraph's explicit padding).
Shape conv_output(MpsOp op, const Shape& x, const Shape& w, const PoolWindow& win) {
  if (x.size() != 4 || w.size() != 4)
    plan_error(op, "NCHW source and OIHW weights, got ranks ", x.size(), " and ", w.size());
  if (win.groups <= 0 || x[1] != w[1] * win.groups || w[0] % win.groups != 0 || w[2] != win.kh || w[3] != win.kw)
    plan_error(op, "weights ", shape_str(w), " do not fit source ", shape_str(x), " with groups=", win.groups);
  const Shape out{x[0], w[0], pooled_extent(x[2], win.kh, win.sh, win.dh, win.pad_top, win.pad_bottom),
                  pooled_extent(x[3], win.kw, win.sw, win.dw, win.pad_left, win.pad_right)};
  if (out[2] <= 0 || out[3] <= 0) plan_error(op, "window larger than the padded source");
  return out;
}
}  // namespace

PlanBuilder::V PlanBuilder::conv2d(V x, V weights, const PoolWindow& w) {
  if (!is_float_plan(dtype(x)) || dtype(weights) != dtype(x))
    plan_error(MpsOp::Conv2d, "floating operands of one dtype");
  V r = op1(MpsOp::Conv2d, {x, weights}, dtype(x), conv_output(MpsOp::Conv2d, shape(x), shape(weights), w));
  p_.nodes.back().window = w;
  return r;
}

PlanBuilder::V PlanBuilder::conv2d_data_gradient(V grad, V weights, const Shape& source_shape, const PoolWindow& w) {
  if (!is_float_plan(dtype(grad)) || dtype(weights) != dtype(grad))
    plan_error(MpsOp::Conv2dDataGradient, "floating operands of one dtype");
  if (conv_output(MpsOp::Conv2dDataGradient, source_shape, shape(weights), w) != shape(grad))
    plan_error(MpsOp::Conv2dDataGradient, "gradient ", shape_str(shape(grad)), " is not the output of a source ",
               shape_str(source_shape));
  V r = op1(MpsOp::Conv2dDataGradient, {grad, weights}, dtype(grad), source_shape);
  p_.nodes.back().a = source_shape;
  p_.nodes.back().window = w;
  return r;
}

PlanBuilder::V PlanBuilder::conv2d_weights_gradient(V grad, V source, const Shape& weights_shape,
                                                    const PoolWindow& w) {
  if (!is_float_plan(dtype(grad)) || dtype(source) != dtype(grad))
    plan_error(MpsOp::Conv2dWeightsGradient, "floating operands of one dtype");
  if (conv_output(MpsOp::Conv2dWeightsGradient, shape(source), weights_shape, w) != shape(grad))
    plan_error(MpsOp::Conv2dWeightsGradient, "gradient ", shape_str(shape(grad)), " is not the output of source ",
               shape_str(shape(source)));
  V r = op1(MpsOp::Conv2dWeightsGradient, {grad, source}, dtype(grad), weights_shape);
  p_.nodes.back().a = weights_shape;
  p_.nodes.back().window = w;
  return r;
}

PlanBuilder::V PlanBuilder::fit(V x, const Shape& s) {
  const Shape want = graph_shape(s);
  if (shape(x) == want) return x;
  if (numel(shape(x)) == numel(want)) return reshape(x, want);
  return broadcast(x, want);
}

}  // namespace lucid::metal
