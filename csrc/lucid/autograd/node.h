#pragma once
// The eager tape. Every differentiable op call that needs a gradient leaves a
// Node; leaves collect gradients through AccumulateGrad. Backward walks the
// nodes and calls each primitive's vjp() - the same rule under tracing, where
// it records the backward graph instead of computing it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/primitive.h"

namespace lucid::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
  uint32_t input_nr = 0;
};

// A tensor kept for the backward pass, with the storage version it had, so a
// later in-place write to it is detected instead of giving a wrong gradient.
// An input is also kept with its history, for a backward that records its own
// (create_graph); an output is not (its history is the node keeping it).
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool keep_data, bool is_output = false);
  // with_history: the input itself (its grad_fn) rather than a detached handle.
  Tensor unpack(const std::string& node_name, bool with_history = false) const;
  void release() {
    data_ = Tensor();
    original_ = Tensor();
  }
  const TensorMeta& meta() const { return meta_; }

 private:
  Tensor data_, original_;
  TensorMeta meta_;
  uint64_t version_ = 0;
  bool keep_data_ = false;
  bool released_ = false;
};

// Functions of a gradient registered on a tensor (register_hook), run in
// registration order before the gradient goes on: each returns the gradient
// to use instead, or an undefined tensor to keep it.
using GradHook = std::function<Tensor(const Tensor&)>;
struct GradHooks {
  struct Entry {
    uint64_t id;
    uint32_t output_nr;  // which output of the node (0 for a leaf; kAfterAccumulate: see below)
    GradHook fn;
  };
  // A leaf's hooks run after its .grad is accumulated (register_post_accumulate_grad_hook):
  // called with the leaf itself, their result ignored.
  static constexpr uint32_t kAfterAccumulate = UINT32_MAX;
  std::vector<Entry> entries;
  uint64_t add(uint32_t output_nr, GradHook fn);
  void remove(uint64_t id);
  // Runs the hooks of `output_nr` on g (a hook may not change its shape).
  void run(uint32_t output_nr, Tensor& g) const;
  void run_after_accumulate(const Tensor& leaf) const;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // Gradients w.r.t. the node's inputs (one per next edge), given the
  // gradients of its outputs (undefined where no gradient arrived).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual void release_saved() {}
  virtual size_t num_outputs() const { return 1; }

  std::vector<Edge> next_edges;
  uint64_t sequence_nr;
  // Non-leaf tensors that asked for .grad (retain_grad), by output index.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;
  // Hooks of non-leaf tensors this node made (register_hook), by output index.
  GradHooks hooks;
};

// PyTorch's name for a node: a primitive's name in CamelCase with
// "Backward0" (sum -> SumBackward0, log_softmax -> LogSoftmaxBackward0); a
// Function's node is already "<Function>Backward"; a leaf's accumulator is
// PyTorch's C++ class name.
std::string display_name(const Node& n);

// The node left by a primitive: saves what the primitive's vjp reads.
class PrimitiveNode : public Node {
 public:
  PrimitiveNode(PrimitivePtr prim, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  std::string name() const override;
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release_saved() override;
  size_t num_outputs() const override { return output_metas_.size(); }

 private:
  PrimitivePtr prim_;
  std::vector<SavedTensor> inputs_, outputs_;
  std::vector<TensorMeta> output_metas_;
  bool released_ = false;
};

// Adds incoming gradients into a leaf's .grad.
class AccumulateGrad : public Node {
 public:
  // Runs as soon as it is ready (PyTorch gives accumulators the highest
  // sequence number), so a leaf's .grad and hooks are done before the next
  // node of the graph.
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) { sequence_nr = UINT64_MAX; }
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// Gives `t` the history (node, output_nr), also a tensor that had one (an
// in-place op's result). A retain_grad() of t follows it: t.grad is the
// gradient of t's current value, as in PyTorch (hooks stay where they were).
void set_history(const Tensor& t, std::shared_ptr<Node> node, uint32_t output_nr);

// The edge through which a gradient reaches `t` (its grad_fn, or its leaf
// accumulator); a null edge when `t` needs no gradient.
Edge gradient_edge(const Tensor& t);

// register_hook: `fn` sees (and may replace) each gradient computed for `t`,
// before it is accumulated into .grad or passed on. Returns an id for
// remove_grad_hook.
uint64_t add_grad_hook(const Tensor& t, GradHook fn);
// register_post_accumulate_grad_hook: `fn(leaf)` after each accumulation into a leaf's .grad.
uint64_t add_post_accumulate_grad_hook(const Tensor& leaf, GradHook fn);
void remove_grad_hook(const Tensor& t, uint64_t id);

// A view's history after its base's changed (a write through the view or
// an alias): the view becomes a view of the base's current history
// (PyTorch regenerates a view's grad_fn the same way). Stale views are
// refreshed whenever their gradient edge is taken.
void rederive_view_history(const Tensor& view);
void refresh_view_history(const Tensor& t);

// Records history for an op call when grad mode is on and an input requires
// grad: sets grad_fn/requires_grad of `outputs`.
void record_history(const PrimitivePtr& prim, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// Runs the tape backward from `roots` with the given gradients.
// With `inputs` empty, gradients are accumulated into leaves' .grad;
// otherwise the gradients of `inputs` are returned and no .grad changes.
// create_graph: the backward pass records history itself, so its gradients
// can be differentiated again (higher-order gradients).
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                                 bool retain_graph, const std::vector<Tensor>& inputs = {},
                                 bool allow_unused = false, bool create_graph = false);

}  // namespace lucid::autograd
