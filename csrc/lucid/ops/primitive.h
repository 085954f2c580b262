#pragma once
// A primitive is the unit the graph is made of. Each one is defined once:
//   - infer(): the shape/dtype rule,
//   - vjp():   the derivative, written with ops (ops.h), so that it runs
//              eagerly and records a backward graph under tracing alike,
//   - a kernel per backend, looked up in the kernel table (kernels.h).
// Attributes (axes, flags...) are members; equals()/hash() cover them so the
// compiler can deduplicate nodes and the cache can key on them.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  ConvTranspose2d,
  Split,
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

// Hash combining for attribute hashes.
inline size_t hash_mix(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }
template <class Seq>
size_t hash_seq(size_t seed, const Seq& s) {
  for (const auto& x : s) seed = hash_mix(seed, std::hash<std::decay_t<decltype(x)>>()(x));
  return seed;
}

}  // namespace lucid
