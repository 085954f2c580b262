#pragma once
// The concrete primitives. Their shape rules and VJPs are defined in the
// ops/*.cpp file of their area, next to the public ops that build them;
// kernels live in backend/<device>/.
#include <string>
#include <tuple>
#include <vector>

#include "lucid/ops/primitive.h"

namespace lucid {

#define LUCID_PRIMITIVE_COMMON                                                                  \
  std::string name() const override;                                                           \
  std::vector<TensorMeta> infer(const std::vector<TensorMeta>& inputs) const override;         \
  std::vector<Tensor> vjp(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, \
                          const std::vector<Tensor>& cotangents, const std::vector<int>& argnums) const override;

// equals() and hash() of a primitive with attributes, from its attrs()
// (primitive.h): the one list of what tells two of its kind apart.
#define LUCID_PRIMITIVE_ATTRS                                                                      \
  bool equals(const Primitive& o) const override {                                                \
    return o.kind() == kind() && attrs_equal(attrs(), static_cast<decltype(this)>(&o)->attrs());  \
  }                                                                                               \
  size_t hash() const override { return attrs_hash(size_t(kind()), attrs()); }

#define LUCID_PRIMITIVE_VIEW                \
  bool is_view() const override { return true; } \
  std::optional<Layout> view_layout(const Layout& in) const override;

// ---------------------------------------------------------------- elementwise
enum class UnaryOp : uint8_t {
  Neg, Abs, Sign, Exp, Log, Log1p, Expm1, Sqrt, Rsqrt, Square, Reciprocal, Sin, Cos, Tanh, Sigmoid,
  Relu, GeluErf, GeluTanh, Silu, Erf, Floor, Ceil, Round, Trunc, LogicalNot, IsFinite, IsNan, IsInf,
  BitNot,  // integers only (appended: earlier codes keep their values)
  Lgamma, Digamma, Trigamma, Erfinv,  // special functions (trigamma: polygamma(1, x))
  // The activations' derivatives, the factors their VJPs multiply the
  // cotangent by: one pass in eager mode where the formulas were a dozen.
  GeluErfGrad, GeluTanhGrad, SiluGrad,
  Count
};
const char* unary_op_name(UnaryOp op);
// The ops whose result is bool whatever the input dtype, named one by one
// (not inferred from the enum's order); usable in `if constexpr`.
constexpr bool unary_returns_bool(UnaryOp op) {
  return op == UnaryOp::LogicalNot || op == UnaryOp::IsFinite || op == UnaryOp::IsNan || op == UnaryOp::IsInf;
}
// The ops whose kernels take floating-point inputs only (the op layer casts
// integers to a float type first).
constexpr bool unary_is_float_only(UnaryOp op) {
  return op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::Sign && op != UnaryOp::Square &&
         op != UnaryOp::Relu && op != UnaryOp::BitNot && !unary_returns_bool(op);
}

struct Unary final : Primitive {
  UnaryOp op;
  auto attrs() const { return std::tie(op); }
  explicit Unary(UnaryOp op) : Primitive(OpKind::Unary), op(op) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override;
};

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, FloorDiv, Remainder, Pow, Maximum, Minimum, Atan2,
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor,
  Fmod,  // C's fmod: the remainder takes the dividend's sign (appended: earlier codes keep their values)
  BitAnd, BitOr, BitXor, LeftShift, RightShift,  // integers and bool (shifts: integers)
  Count
};
const char* binary_op_name(BinaryOp op);
constexpr bool binary_returns_bool(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr: case BinaryOp::LogicalXor: return true;
    default: return false;
  }
}
// Integer division or remainder by zero: PyTorch raises (its CPU kernels
// name the Python exception). Every backend raises this one error.
[[noreturn]] void integer_division_by_zero(BinaryOp op);

// Broadcasting binary op over two inputs of one dtype.
struct Binary final : Primitive {
  BinaryOp op;
  auto attrs() const { return std::tie(op); }
  explicit Binary(BinaryOp op) : Primitive(OpKind::Binary), op(op) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override;
  using Primitive::saves_input;
  bool saves_input(int i, const std::vector<bool>& needs_grad) const override;
};

// where(cond, a, b), broadcasting all three.
struct Where final : Primitive {
  Where() : Primitive(OpKind::Where) {}
  LUCID_PRIMITIVE_COMMON
  bool differentiable_input(int i) const override { return i != 0; }
  uint8_t saved() const override { return kSaveInputs; }
  bool saves_input(int i) const override { return i == 0; }  // the condition
};

struct Cast final : Primitive {
  DType to;
  auto attrs() const { return std::tie(to); }
  explicit Cast(DType to) : Primitive(OpKind::Cast), to(to) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

struct Copy final : Primitive {
  Copy() : Primitive(OpKind::Copy) {}
  LUCID_PRIMITIVE_COMMON
  uint8_t saved() const override { return 0; }
};

// An eager copy to another device, as autograd records it: it runs no
// kernel (to_device transfers the memory), its VJP moves the gradient back.
// Never traced: a compiled step keeps one device.
struct DeviceCopy final : Primitive {
  Device from, to;
  auto attrs() const { return std::tie(from, to); }
  DeviceCopy(Device from, Device to) : Primitive(OpKind::DeviceCopy), from(from), to(to) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// ------------------------------------------------------------------ creation
// `value` fills floating and bool tensors; integer tensors take `int_value`,
// exact where a double is not (beyond 2**53).
struct Full final : Primitive {
  TensorMeta meta;
  double value;
  int64_t int_value;
  auto attrs() const { return std::tie(meta, value, int_value); }
  Full(TensorMeta meta, double value, int64_t int_value)
      : Primitive(OpKind::Full), meta(std::move(meta)), value(value), int_value(int_value) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
};

struct Arange final : Primitive {
  double start, step;
  TensorMeta meta;  // 1-D
  auto attrs() const { return std::tie(start, step, meta); }
  Arange(double start, double step, TensorMeta meta)
      : Primitive(OpKind::Arange), start(start), step(step), meta(std::move(meta)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
};

enum class Distribution : uint8_t { Uniform, Normal };
// Counter-based draws (Philox 4x32-10): input 0 is an int64 [seed, offset]
// tensor, so a compiled step can take fresh keys as a feed every call.
struct Random final : Primitive {
  Distribution dist;
  Shape shape;
  DType dtype;
  // Where the draws are made: a compiled step's key is a host feed, its
  // draws live on the step's device.
  Device device;
  auto attrs() const { return std::tie(dist, shape, dtype, device); }
  Random(Distribution dist, Shape shape, DType dtype, Device device)
      : Primitive(OpKind::Random), dist(dist), shape(std::move(shape)), dtype(dtype), device(device) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int) const override { return false; }
};

// ---------------------------------------------------------------- reductions
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, All, Any };
struct Reduce final : Primitive {
  ReduceOp op;
  std::vector<int> axes;  // sorted, unique, non-negative
  bool keepdim;
  auto attrs() const { return std::tie(op, axes, keepdim); }
  Reduce(ReduceOp op, std::vector<int> axes, bool keepdim)
      : Primitive(OpKind::Reduce), op(op), axes(std::move(axes)), keepdim(keepdim) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override;
};

enum class ArgReduceOp : uint8_t { ArgMax, ArgMin };
struct ArgReduce final : Primitive {
  ArgReduceOp op;
  int axis;
  bool keepdim;
  auto attrs() const { return std::tie(op, axis, keepdim); }
  ArgReduce(ArgReduceOp op, int axis, bool keepdim)
      : Primitive(OpKind::ArgReduce), op(op), axis(axis), keepdim(keepdim) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int) const override { return false; }
};

// ------------------------------------------------------------ linear algebra
// [..., M, K] @ [..., K, N] with identical batch dims (ops::matmul broadcasts).
// The transpose flags pass a transposed row-major operand to BLAS without a
// copy; ops::gemm decides them from the operands' layouts, eagerly and under
// tracing alike, so a compiled step runs the GEMM variants eager mode runs.
// A matmul as its kernels run it: batch x (m x k) @ (k x n), with the
// transpose flags made canonical (see Matmul::gemm).
struct Gemm {
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
};

struct Matmul final : Primitive {
  bool trans_a = false, trans_b = false;
  auto attrs() const { return std::tie(trans_a, trans_b); }
  Matmul(bool ta = false, bool tb = false) : Primitive(OpKind::Matmul), trans_a(ta), trans_b(tb) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  // The GEMM for operands of these shapes. An operand with a size-1 dim has
  // the same memory transposed or not, so its flag only records how the
  // caller reached it (a contiguous view or a transposed one); BLAS rounds
  // each flag's path differently, so every kernel runs the flag-free form
  // and the same product gives the same bits however it was reached.
  Gemm gemm(const Shape& a, const Shape& b) const;
  // The VJP reads only the operands: the product may be written in place
  // (conv or linear followed by ReLU(inplace=True)), as in PyTorch.
  uint8_t saved() const override { return kSaveInputs; }
};

// --------------------------------------------------------------------- shape
struct Reshape final : Primitive {
  Shape shape;
  auto attrs() const { return std::tie(shape); }
  explicit Reshape(Shape s) : Primitive(OpKind::Reshape), shape(std::move(s)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

struct Permute final : Primitive {
  std::vector<int> perm;
  auto attrs() const { return std::tie(perm); }
  explicit Permute(std::vector<int> p) : Primitive(OpKind::Permute), perm(std::move(p)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

struct Broadcast final : Primitive {
  Shape shape;
  auto attrs() const { return std::tie(shape); }
  explicit Broadcast(Shape s) : Primitive(OpKind::Broadcast), shape(std::move(s)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

struct SliceSpec {
  std::vector<int64_t> starts, stops, steps;  // one per dim, normalised, step > 0
  Shape out_shape() const;
  bool operator==(const SliceSpec& o) const { return starts == o.starts && stops == o.stops && steps == o.steps; }
};
inline size_t hash_value(const SliceSpec& s) { return hash_seq(hash_seq(hash_seq(0, s.starts), s.stops), s.steps); }

struct Slice final : Primitive {
  SliceSpec spec;
  auto attrs() const { return std::tie(spec); }
  explicit Slice(SliceSpec s) : Primitive(OpKind::Slice), spec(std::move(s)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

// (base, src) -> base with base[spec] = src.
struct SliceScatter final : Primitive {
  SliceSpec spec;
  auto attrs() const { return std::tie(spec); }
  explicit SliceScatter(SliceSpec s) : Primitive(OpKind::SliceScatter), spec(std::move(s)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

struct Concat final : Primitive {
  int axis;
  auto attrs() const { return std::tie(axis); }
  explicit Concat(int axis) : Primitive(OpKind::Concat), axis(axis) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// x -> one output per entry of `sizes`: consecutive slices along `axis`
// (PyTorch's split_with_sizes). One node for all parts, so the VJP is one
// concatenation of the cotangents rather than a zero-filled scatter per part:
// a loop over the parts (a recurrent layer's time steps) stays linear in
// their number under autograd.
struct Split final : Primitive {
  int axis;
  std::vector<int64_t> sizes;
  auto attrs() const { return std::tie(axis, sizes); }
  Split(int axis, std::vector<int64_t> sizes) : Primitive(OpKind::Split), axis(axis), sizes(std::move(sizes)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// ------------------------------------------------------------------ indexing
// torch.gather: out[i][j] = x[i][index[i][j]] along `axis`.
// A loss reading the log-probabilities at its class targets names itself in
// `loss`, so an out-of-range target is reported as the user's call.
struct Gather final : Primitive {
  int axis;
  std::string loss;  // empty for a plain gather
  auto attrs() const { return std::tie(axis, loss); }
  explicit Gather(int axis, std::string loss = {}) : Primitive(OpKind::Gather), axis(axis), loss(std::move(loss)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i == 0; }
  uint8_t saved() const override { return kSaveInputs; }
  bool saves_input(int i) const override { return i == 1; }  // the index
};

// (base, index, src): base with src scattered along `axis` at index,
// added (accumulate) or written.
struct ScatterAdd final : Primitive {
  int axis;
  bool accumulate;
  auto attrs() const { return std::tie(axis, accumulate); }
  ScatterAdd(int axis, bool accumulate) : Primitive(OpKind::ScatterAdd), axis(axis), accumulate(accumulate) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i != 1; }
  uint8_t saved() const override { return kSaveInputs; }
  bool saves_input(int i) const override { return i == 1; }  // the index
};

// (base, index, src): src reduced into base along `axis` at index, PyTorch's
// scatter_reduce. Without include_self, base's own value at a written
// position takes no part in the reduction (it is replaced).
enum class ScatterReduceOp : uint8_t { Sum, Prod, Mean, Amax, Amin };
struct ScatterReduce final : Primitive {
  int axis;
  ScatterReduceOp op;
  bool include_self;
  auto attrs() const { return std::tie(axis, op, include_self); }
  ScatterReduce(int axis, ScatterReduceOp op, bool include_self)
      : Primitive(OpKind::ScatterReduce), axis(axis), op(op), include_self(include_self) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i != 1; }
};

// x.index_select(axis, index) with a 1-D int64 index.
// `caller` is the user's op named when an index is out of range (embedding).
struct IndexSelect final : Primitive {
  int axis;
  std::string caller;
  auto attrs() const { return std::tie(axis, caller); }
  explicit IndexSelect(int axis, std::string caller = "index_select")
      : Primitive(OpKind::IndexSelect), axis(axis), caller(std::move(caller)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i == 0; }
  uint8_t saved() const override { return kSaveInputs; }
  bool saves_input(int i) const override { return i == 1; }  // the index
};

// (base, index, src): base.index_add(axis, index, src).
struct IndexAdd final : Primitive {
  int axis;
  auto attrs() const { return std::tie(axis); }
  explicit IndexAdd(int axis) : Primitive(OpKind::IndexAdd), axis(axis) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i != 1; }
  uint8_t saved() const override { return kSaveInputs; }
  bool saves_input(int i) const override { return i == 1; }  // the index
};

// ------------------------------------------------------------------------ nn
struct Softmax final : Primitive {
  int axis;
  bool log;
  auto attrs() const { return std::tie(axis, log); }
  Softmax(int axis, bool log) : Primitive(OpKind::Softmax), axis(axis), log(log) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }
};

// (g, y) -> the input gradient of Softmax(axis, log) with output y:
// y * (g - sum(g * y)), or g - exp(y) * sum(g) for log_softmax.
struct SoftmaxBackward final : Primitive {
  int axis;
  bool log;
  auto attrs() const { return std::tie(axis, log); }
  SoftmaxBackward(int axis, bool log) : Primitive(OpKind::SoftmaxBackward), axis(axis), log(log) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveInputs; }
};

// ------------------------------------------------------- sorting and scans
// Sorting primitives return indices only (int64); the values are a gather()
// of the input, whose gradient (a scatter_add) serves sort and topk alike.
// Order: NaN above every number (last ascending, first descending), equal
// elements in their original order (PyTorch's stable sort).
struct ArgSort final : Primitive {
  int axis;
  bool descending;
  auto attrs() const { return std::tie(axis, descending); }
  ArgSort(int axis, bool descending) : Primitive(OpKind::ArgSort), axis(axis), descending(descending) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int) const override { return false; }
  uint8_t saved() const override { return 0; }
};

// Indices of the k largest (or smallest) elements along `axis`, in sorted
// order, ties by position.
struct TopK final : Primitive {
  int axis;
  int64_t k;
  bool largest;
  auto attrs() const { return std::tie(axis, k, largest); }
  TopK(int axis, int64_t k, bool largest) : Primitive(OpKind::TopK), axis(axis), k(k), largest(largest) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int) const override { return false; }
  uint8_t saved() const override { return 0; }
};

// Coordinates of the non-zero elements, [count, ndim] in row-major order.
// The count decides the shape, so the op layer computes it first (eagerly:
// nonzero cannot be traced).
struct NonZero final : Primitive {
  int64_t count;
  auto attrs() const { return std::tie(count); }
  explicit NonZero(int64_t count) : Primitive(OpKind::NonZero), count(count) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int) const override { return false; }
  uint8_t saved() const override { return 0; }
};

// Inclusive scan along `axis` (cumsum, cumprod), from the last element
// backwards when `reverse` (the gradient of a forward cumsum). Floats
// accumulate in double (16-bit floats in float), PyTorch's CPU rule;
// integers wrap.
enum class ScanOp : uint8_t { Sum, Prod };
struct Scan final : Primitive {
  ScanOp op;
  int axis;
  bool reverse;
  auto attrs() const { return std::tie(op, axis, reverse); }
  Scan(ScanOp op, int axis, bool reverse) : Primitive(OpKind::Scan), op(op), axis(axis), reverse(reverse) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return op == ScanOp::Sum ? 0 : kSaveInputs | kSaveOutputs; }
};

// ---------------------------------------------------------- strided views
// A view whose strides are linear in the input's (diagonal, unfold): output
// dim j has stride sum_i coeffs[j][i] * in.strides[i] and the offset moves by
// sum_i offset_coeffs[i] * in.strides[i].
struct StridedView final : Primitive {
  std::string op;  // "diagonal", "unfold": for errors and dumps
  Shape shape;
  std::vector<Shape> coeffs;
  Shape offset_coeffs;
  // `op` only names the view: views of one geometry are one view.
  auto attrs() const { return std::tie(shape, coeffs, offset_coeffs); }
  StridedView(std::string op, Shape shape, std::vector<Shape> coeffs, Shape offset_coeffs)
      : Primitive(OpKind::StridedView), op(std::move(op)), shape(std::move(shape)), coeffs(std::move(coeffs)),
        offset_coeffs(std::move(offset_coeffs)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

// A 1-D tensor (the elements of a storage) -> the tensor laid out as
// `layout` in it: how a compiled step reads a tensor out of the memory it
// shares with others, and as_strided.
struct AsStrided final : Primitive {
  Layout layout;
  auto attrs() const { return std::tie(layout); }
  explicit AsStrided(Layout l) : Primitive(OpKind::AsStrided), layout(std::move(l)) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  LUCID_PRIMITIVE_VIEW
  uint8_t saved() const override { return 0; }
};

// (x 1-D, src) -> x with the elements at `layout` replaced by src (or, with
// `accumulate`, increased by it: overlapping layouts add up). How a write
// through a view reaches the memory it shares.
struct AsStridedScatter final : Primitive {
  Layout layout;
  bool accumulate;
  auto attrs() const { return std::tie(layout, accumulate); }
  AsStridedScatter(Layout l, bool accumulate)
      : Primitive(OpKind::AsStridedScatter), layout(std::move(l)), accumulate(accumulate) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// Autograd's record of an in-place write through a view (PyTorch's
// CopySlices): (base before, new view contents) -> base after. Layouts are
// in the shared storage of `storage_numel` elements. Never run: the write
// itself is a copy into the view's memory.
struct ViewScatter final : Primitive {
  Layout base, view;
  int64_t storage_numel;
  auto attrs() const { return std::tie(base, view, storage_numel); }
  ViewScatter(Layout base, Layout view, int64_t n)
      : Primitive(OpKind::ViewScatter), base(std::move(base)), view(std::move(view)), storage_numel(n) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// Autograd's record of a view derived anew from its base after the base's
// history changed: base -> the view at `view` in the shared storage.
struct ViewOfBase final : Primitive {
  Layout base, view;
  int64_t storage_numel;
  auto attrs() const { return std::tie(base, view, storage_numel); }
  ViewOfBase(Layout base, Layout view, int64_t n)
      : Primitive(OpKind::ViewOfBase), base(std::move(base)), view(std::move(view)), storage_numel(n) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};


// ------------------------------------------------------------ linear algebra
// Decompositions and solvers over the last two dims (the leading dims are a
// batch), float32 and float64; LAPACK on the CPU (backend/cpu/linalg_kernels.cpp).
// An `info` output (int32, one per matrix) carries LAPACK's status, from
// which the op layer raises LinAlgError for singular or non-positive-definite
// input (eagerly; a compiled step returns the numbers as LAPACK left them).

// A [.., m, n] -> (LU packed [.., m, n], pivots [.., k] int32 1-based as
// LAPACK's, perm [.., m] int64: row i of L U is row perm[i] of A, info).
struct LuFactor final : Primitive {
  LuFactor() : Primitive(OpKind::LuFactor) {}
  LUCID_PRIMITIVE_COMMON
  uint8_t saved() const override { return kSaveOutputs; }
};

// (LU, pivots, B [.., n, k]) -> X with A X = B (A^T X = B when `adjoint`).
struct LuSolve final : Primitive {
  bool adjoint;
  auto attrs() const { return std::tie(adjoint); }
  explicit LuSolve(bool adjoint) : Primitive(OpKind::LuSolve), adjoint(adjoint) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool differentiable_input(int i) const override { return i != 1; }
};

// A -> (A^-1, info).
struct Inverse final : Primitive {
  Inverse() : Primitive(OpKind::Inverse) {}
  LUCID_PRIMITIVE_COMMON
  uint8_t saved() const override { return kSaveOutputs; }
};

// (A [.., n, n], B [.., n, k]) of one batch shape -> (X, info), A X = B.
struct LinearSolve final : Primitive {
  LinearSolve() : Primitive(OpKind::LinearSolve) {}
  LUCID_PRIMITIVE_COMMON
  bool saves_input(int i) const override { return i == 0; }
};

// A -> det A, [..], the product of its LU factorization's diagonal.
struct Det final : Primitive {
  Det() : Primitive(OpKind::Det) {}
  LUCID_PRIMITIVE_COMMON
};

// A -> (sign, log|det A|), [..]; a singular A gives (0, -inf).
struct Slogdet final : Primitive {
  Slogdet() : Primitive(OpKind::Slogdet) {}
  LUCID_PRIMITIVE_COMMON
  uint8_t saved() const override { return kSaveInputs; }
};

// A -> (L with A = L L^T, or U = L^T when `upper`; info). Reads the lower
// triangle of A (the upper one when `upper`).
struct Cholesky final : Primitive {
  bool upper;
  auto attrs() const { return std::tie(upper); }
  explicit Cholesky(bool upper) : Primitive(OpKind::Cholesky), upper(upper) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }
};

// (A [.., n, n] triangular, B) -> X with A X = B (`left`) or X A = B.
struct TriangularSolve final : Primitive {
  bool upper, left, unitriangular;
  auto attrs() const { return std::tie(upper, left, unitriangular); }
  TriangularSolve(bool upper, bool left, bool unitriangular)
      : Primitive(OpKind::TriangularSolve), upper(upper), left(left), unitriangular(unitriangular) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  bool saves_input(int i) const override { return i == 0; }
};

// A [.., m, n] -> (Q, R); mode as torch.linalg.qr's ("r": Q is empty).
enum class QrMode : uint8_t { Reduced, Complete, R };
struct Qr final : Primitive {
  QrMode mode;
  auto attrs() const { return std::tie(mode); }
  explicit Qr(QrMode mode) : Primitive(OpKind::Qr), mode(mode) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }
};

// Symmetric A -> (eigenvalues ascending [.., n], eigenvectors as columns
// [.., n, n]). Reads the lower triangle of A (the upper one when `upper`).
// `values_only` (eigvalsh): the eigenvectors are still computed, as the
// derivative needs them, but the result is the eigenvalues alone, and the
// vjp takes the eigenvalues' cotangent only (PyTorch's formula for it).
struct Eigh final : Primitive {
  bool upper, values_only;
  auto attrs() const { return std::tie(upper, values_only); }
  Eigh(bool upper, bool values_only) : Primitive(OpKind::Eigh), upper(upper), values_only(values_only) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }
};

// A [.., m, n] -> (U, S descending, Vh) with A = U diag(S) Vh; k = min(m, n)
// columns of U and rows of Vh, or m and n with `full_matrices`.
// `values_only` (svdvals): as Eigh's.
struct Svd final : Primitive {
  bool full_matrices, values_only;
  auto attrs() const { return std::tie(full_matrices, values_only); }
  Svd(bool full_matrices, bool values_only)
      : Primitive(OpKind::Svd), full_matrices(full_matrices), values_only(values_only) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return kSaveOutputs; }
};

// ------------------------------------------------------------------ sampling
// Draws whose distribution's parameters are tensors, one draw per element,
// by rejection or inversion loops (PyTorch's samplers): input 0 is the int64
// [seed, offset] key, as Random's, and element i draws from its own
// philox::ElementStream at counter offset + i. The parameters (Gamma:
// concentration; Poisson: rate; Binomial: total count, probability) share
// one shape and floating dtype, which the draws take.
enum class ParametricDistribution : uint8_t { Gamma, Poisson, Binomial };
struct RandomParametric final : Primitive {
  ParametricDistribution dist;
  auto attrs() const { return std::tie(dist); }
  explicit RandomParametric(ParametricDistribution dist) : Primitive(OpKind::RandomParametric), dist(dist) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  // Gamma's draws are reparameterised: d sample / d concentration is
  // ReparamGrad(StandardGamma); Poisson's gradient is zero (PyTorch's), and
  // Binomial's parameters are not differentiable.
  bool differentiable_input(int i) const override { return i == 1 && dist != ParametricDistribution::Binomial; }
  uint8_t saved() const override { return dist == ParametricDistribution::Gamma ? kSaveInputs | kSaveOutputs : 0; }
  bool saves_input(int i) const override { return dist == ParametricDistribution::Gamma && i == 1; }
};

// The implicit reparameterisation gradients of Gamma and Dirichlet draws
// (PyTorch's _standard_gamma_grad and _dirichlet_grad): StandardGamma
// (alpha, x) -> d x / d alpha for x ~ Gamma(alpha, 1); Dirichlet (x, alpha,
// total) -> -(d/d alpha cdf) / pdf / (1 - x) for x ~ Beta(alpha, total - alpha).
// Series and rational approximations, elementwise over operands of one shape
// and dtype; not differentiable themselves (nor are PyTorch's).
enum class ReparamGradOp : uint8_t { StandardGamma, Dirichlet };
struct ReparamGrad final : Primitive {
  ReparamGradOp op;
  auto attrs() const { return std::tie(op); }
  explicit ReparamGrad(ReparamGradOp op) : Primitive(OpKind::ReparamGrad), op(op) {}
  std::string name() const override;
  std::vector<TensorMeta> infer(const std::vector<TensorMeta>& inputs) const override;
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

}  // namespace lucid
