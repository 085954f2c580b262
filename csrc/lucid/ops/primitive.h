#pragma once
// A primitive is the unit the graph is made of. Each one is defined once:
//   - infer(): the shape/dtype rule,
//   - vjp():   the derivative, written with ops (ops.h), so that it runs
//              eagerly and records a backward graph under tracing alike,
//   - a kernel per backend, looked up in the kernel table (kernels.h),
//   - for a fused primitive, decompose(): the same computation written with
//              ops, which a backend without a kernel for it compiles instead.
// Attributes (axes, flags...) are members, listed once in attrs();
// equals()/hash() derive from that list (LUCID_PRIMITIVE_ATTRS), so the
// compiler can deduplicate nodes and the cache can key on them.
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lucid/core/hash.h"
#include "lucid/core/tensor.h"

namespace lucid {

enum class OpKind : uint8_t {
  Unary,
  Binary,
  Where,
  Cast,
  Copy,
  Full,
  Arange,
  Random,
  Reduce,
  ArgReduce,
  Matmul,
  Reshape,
  Permute,
  Broadcast,
  Slice,
  SliceScatter,
  Concat,
  Gather,
  ScatterAdd,
  ScatterReduce,
  IndexSelect,
  IndexAdd,
  Softmax,
  Im2Col,
  Col2Im,
  EngineUpdate,
  MaxPool2d,
  MaxPool2dBackward,
  LayerNorm,
  LayerNormBackward,
  SoftmaxBackward,
  ArgSort,
  TopK,
  NonZero,
  Scan,
  AsStrided,
  AsStridedScatter,
  ViewScatter,
  ViewOfBase,
  StridedView,
  RecurrentCell,
  RecurrentCellBackward,
  Conv2d,
  Conv2dBackwardInput,
  Conv2dBackwardWeight,
  Split,
  DeviceCopy,
  LuFactor,
  LuSolve,
  Inverse,
  LinearSolve,
  Slogdet,
  Det,
  Cholesky,
  TriangularSolve,
  Qr,
  Eigh,
  Svd,
  RandomParametric,
  ReparamGrad,
  Count
};

class Primitive;
using PrimitivePtr = std::shared_ptr<const Primitive>;

class Primitive {
 public:
  explicit Primitive(OpKind kind) : kind_(kind) {}
  virtual ~Primitive() = default;

  OpKind kind() const { return kind_; }
  virtual std::string name() const = 0;  // for errors and graph dumps, e.g. "unary(exp)"

  virtual std::vector<TensorMeta> infer(const std::vector<TensorMeta>& inputs) const = 0;

  // Gradients w.r.t. inputs[argnums[i]], given the primal inputs, the outputs
  // and one cotangent per output. Written with ops (see ops.h).
  virtual std::vector<Tensor> vjp(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                                  const std::vector<Tensor>& cotangents, const std::vector<int>& argnums) const;
  // Inputs that can carry a gradient (e.g. not Gather's index).
  virtual bool differentiable_input(int i) const { return true; }
  // What vjp() reads besides metas: autograd keeps only that alive.
  static constexpr uint8_t kSaveInputs = 1, kSaveOutputs = 2;
  virtual uint8_t saved() const { return kSaveInputs | kSaveOutputs; }
  // Among the inputs, those vjp() reads the values of (the others' metas
  // suffice): only these are version-checked, as PyTorch saves only what its
  // formula reads (an index, a condition), so an in-place write to the rest
  // between forward and backward stays legal.
  virtual bool saves_input(int i) const { return (saved() & kSaveInputs) != 0; }
  // The same knowing which inputs want a gradient: PyTorch saves only what
  // the formulas it will run read (y * 2 does not save y, whose gradient is
  // 2 * g), so an in-place write to the rest stays legal.
  virtual bool saves_input(int i, const std::vector<bool>& needs_grad) const { return saves_input(i); }
  // The same among the outputs: an in-place write to one vjp() does not read
  // stays legal.
  virtual bool saves_output(int i) const { return (saved() & kSaveOutputs) != 0; }

  // A fused primitive as the primitives it fuses: its outputs computed from
  // `inputs` with ops, recorded under tracing like vjp(). A backend with no
  // kernel for it compiles the decomposition (graph::decompose_primitives).
  virtual bool decomposes() const { return false; }
  virtual std::vector<Tensor> decompose(const std::vector<Tensor>& inputs) const;

  // Views (PyTorch's view ops): the output shares input 0's memory. Given
  // input 0's layout, the output's; nothing when this call cannot be a view
  // (a reshape whose strides do not allow it: the op copies first). Eagerly
  // a view runs no kernel; a compiled step reads the input's buffer in place
  // where the output layout is contiguous and runs the kernel otherwise.
  virtual bool is_view() const { return false; }
  virtual std::optional<Layout> view_layout(const Layout& in) const { return std::nullopt; }

  // Attribute equality and hash, for CSE and signatures (kind included).
  virtual bool equals(const Primitive& other) const { return kind_ == other.kind_; }
  virtual size_t hash() const { return std::hash<int>()(int(kind_)); }

 private:
  OpKind kind_;
};

// ------------------------------------------------ attribute equality and hash
// A primitive's attrs() is a std::tie of its attribute members: every field
// that changes what it computes (or the error it raises), listed once.
// Floating values compare by their bits: 0.0 and -0.0 and NaN payloads are
// distinct constants, and a NaN equals itself (a node equals its copy).
// Other class types bring operator== and a hash_value() overload, found by
// argument-dependent lookup next to their definitions.
namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class F>
auto float_bits(F f) {
  static_assert(sizeof(F) == 4 || sizeof(F) == 8, "a floating attribute is a float or a double");
  std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t> u;
  std::memcpy(&u, &f, sizeof f);
  return u;
}
}  // namespace detail

template <class T>
bool attr_equal(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return detail::float_bits(a) == detail::float_bits(b);
  } else if constexpr (detail::is_vector<T>::value) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!attr_equal(a[i], b[i])) return false;
    return true;
  } else {
    return a == b;
  }
}

template <class T>
size_t attr_hash(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::hash<decltype(detail::float_bits(v))>()(detail::float_bits(v));
  } else if constexpr (std::is_enum_v<T>) {
    return std::hash<std::underlying_type_t<T>>()(std::underlying_type_t<T>(v));
  } else if constexpr (std::is_integral_v<T> || std::is_same_v<T, std::string>) {
    return std::hash<T>()(v);
  } else if constexpr (detail::is_vector<T>::value) {
    size_t h = v.size();
    for (const auto& x : v) h = hash_mix(h, attr_hash(x));
    return h;
  } else {
    return hash_value(v);
  }
}

// Whole attrs() tuples: every attribute equal; the seed folded with each.
namespace detail {
template <class Tuple, size_t... I>
bool attrs_equal(const Tuple& a, const Tuple& b, std::index_sequence<I...>) {
  return (attr_equal(std::get<I>(a), std::get<I>(b)) && ...);
}
}  // namespace detail
template <class... T>
bool attrs_equal(const std::tuple<T...>& a, const std::tuple<T...>& b) {
  return detail::attrs_equal(a, b, std::index_sequence_for<T...>());
}
template <class... T>
size_t attrs_hash(size_t seed, const std::tuple<T...>& t) {
  std::apply([&](const auto&... x) { ((seed = hash_mix(seed, attr_hash(x))), ...); }, t);
  return seed;
}

}  // namespace lucid
