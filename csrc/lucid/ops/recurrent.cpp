// RecurrentCell / RecurrentCellBackward: the shape rules, the VJP and the
// public step ops (see recurrent.h).
#include "lucid/ops/recurrent.h"

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/op_util.h"

namespace lucid {

using detail::call;
using detail::call_multi;

const char* cell_kind_name(CellKind k) {
  switch (k) {
    case CellKind::RnnTanh: return "rnn_tanh";
    case CellKind::RnnRelu: return "rnn_relu";
    case CellKind::Lstm: return "lstm";
    case CellKind::Gru: return "gru";
  }
  return "?";
}

int cell_gates(CellKind k) { return k == CellKind::Lstm ? 4 : k == CellKind::Gru ? 3 : 1; }

static bool has_state(CellKind k) { return k == CellKind::Lstm || k == CellKind::Gru; }

// Checks (gi, gh, bias[, state]) and returns [B, H].
static Shape check_cell_inputs(const char* op, CellKind cell, const std::vector<TensorMeta>& in) {
  const TensorMeta& gi = in[0];
  LUCID_CHECK(gi.shape.size() == 2, op, ": expected 2-D gates [batch, ", cell_gates(cell), " * hidden], got ",
              shape_str(gi.shape));
  const int64_t b = gi.shape[0], g = gi.shape[1];
  LUCID_CHECK(g % cell_gates(cell) == 0, op, ": the gates' width ", g, " is not a multiple of ", cell_gates(cell));
  const int64_t h = g / cell_gates(cell);
  LUCID_CHECK(in[1].shape == gi.shape, op, ": hidden gates of shape ", shape_str(in[1].shape),
              " do not match the input gates' ", shape_str(gi.shape));
  LUCID_CHECK(in[2].shape == Shape{g}, op, ": expected a bias of shape [", g, "], got ", shape_str(in[2].shape));
  if (has_state(cell))
    LUCID_CHECK(in[3].shape == (Shape{b, h}), op, ": expected a state of shape [", b, ", ", h, "], got ",
                shape_str(in[3].shape));
  for (const auto& m : in) {
    LUCID_CHECK_T(TypeError, m.dtype == gi.dtype, op, ": operands must have one dtype, got ", dtype_name(gi.dtype),
                  " and ", dtype_name(m.dtype));
    LUCID_CHECK(m.device == gi.device, op, ": operands must be on one device, got ", gi.device.str(), " and ",
                m.device.str());
  }
  LUCID_CHECK_T(TypeError, is_floating(gi.dtype), op, ": expected floating-point operands, got ",
                dtype_name(gi.dtype));
  return {b, h};
}

// --------------------------------------------------------------- forward
std::string RecurrentCell::name() const { return std::string(cell_kind_name(cell)) + "_cell"; }
uint8_t RecurrentCell::saved() const {
  switch (cell) {
    case CellKind::RnnTanh:
    case CellKind::RnnRelu: return kSaveOutputs;
    case CellKind::Lstm: return kSaveInputs | kSaveOutputs;  // c' for tanh(c')
    case CellKind::Gru: return kSaveInputs;
  }
  return kSaveInputs | kSaveOutputs;
}

std::vector<TensorMeta> RecurrentCell::infer(const std::vector<TensorMeta>& in) const {
  const size_t want = has_state(cell) ? 4 : 3;
  LUCID_CHECK(in.size() == want, name(), ": expected ", want, " operands, got ", in.size());
  const TensorMeta out{check_cell_inputs(name().c_str(), cell, in), in[0].dtype, in[0].device};
  if (cell == CellKind::Lstm) return {out, out};
  return {out};
}

// The VJP written with ops, the gates recomputed from the inputs: what a
// backward that records history (create_graph) differentiates again.
static void cell_vjp_as_ops(CellKind cell, const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                            const std::vector<Tensor>& cot, Tensor& d_gi, Tensor& d_gh, Tensor& d_state) {
  const Tensor &gi = in[0], &gh = in[1], &bias = in[2];
  const int64_t h = gi.shape()[1] / cell_gates(cell);
  auto gate = [&](const Tensor& t, int k) { return narrow(t, 1, k * h, h); };
  auto dsig = [](const Tensor& s) { return mul(s, rsub(s, 1.0)); };  // s (1 - s)
  auto dtanh = [](const Tensor& t) { return rsub(mul(t, t), 1.0); };  // 1 - t^2
  switch (cell) {
    case CellKind::RnnTanh:
    case CellKind::RnnRelu: {  // from h' (saved, an output of this node): the inputs are not saved
      const Tensor& y = out[0];
      d_gi = d_gh = cell == CellKind::RnnTanh ? mul(cot[0], dtanh(y))
                                              : mul(cot[0], cast(gt(y, wrap_scalar(0.0, y)), y.dtype()));
      return;
    }
    case CellKind::Lstm: {
      const Tensor pre = add(add(gh, bias), gi), &c = in[3];
      const Tensor i = sigmoid(gate(pre, 0)), f = sigmoid(gate(pre, 1)), g = tanh(gate(pre, 2)),
                   o = sigmoid(gate(pre, 3));
      const Tensor tc = tanh(add(mul(f, c), mul(i, g)));
      const Tensor dc = add(cot[1], mul(mul(cot[0], o), dtanh(tc)));
      d_gi = d_gh = cat({mul(mul(dc, g), dsig(i)), mul(mul(dc, c), dsig(f)), mul(mul(dc, i), dtanh(g)),
                         mul(mul(cot[0], tc), dsig(o))}, 1);
      d_state = mul(dc, f);
      return;
    }
    case CellKind::Gru: {
      const Tensor& hs = in[3];
      const Tensor b2 = reshape(bias, {1, -1});
      const Tensor r = sigmoid(add(add(gate(gh, 0), gate(b2, 0)), gate(gi, 0)));
      const Tensor z = sigmoid(add(add(gate(gh, 1), gate(b2, 1)), gate(gi, 1)));
      const Tensor hn = add(gate(gh, 2), gate(b2, 2));
      const Tensor n = tanh(add(gate(gi, 2), mul(r, hn)));
      const Tensor dn = mul(mul(cot[0], rsub(z, 1.0)), dtanh(n));
      const Tensor dr = mul(mul(dn, hn), dsig(r)), dz = mul(mul(cot[0], sub(hs, n)), dsig(z));
      d_gi = cat({dr, dz, dn}, 1);
      d_gh = cat({dr, dz, mul(dn, r)}, 1);
      d_state = mul(cot[0], z);
      return;
    }
  }
}

std::vector<Tensor> RecurrentCell::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                                       const std::vector<Tensor>& cot, const std::vector<int>& argnums) const {
  Tensor d_gi, d_gh, d_state;
  if (autograd::GradMode::is_enabled()) cell_vjp_as_ops(cell, in, out, cot, d_gi, d_gh, d_state);
  else switch (cell) {
    case CellKind::RnnTanh:
    case CellKind::RnnRelu:
      d_gi = d_gh = call<RecurrentCellBackward>({out[0], cot[0]}, cell);
      break;
    case CellKind::Lstm: {
      auto g = call_multi<RecurrentCellBackward>({in[0], in[1], in[2], in[3], out[1], cot[0], cot[1]}, cell);
      d_gi = d_gh = g[0];
      d_state = g[1];
      break;
    }
    case CellKind::Gru: {
      auto g = call_multi<RecurrentCellBackward>({in[0], in[1], in[2], in[3], cot[0]}, cell);
      d_gi = g[0];
      d_gh = g[1];
      d_state = g[2];
      break;
    }
  }
  return detail::grads_for(argnums, [&](int i) -> Tensor {
    switch (i) {
      case 0: return d_gi;
      case 1: return d_gh;
      case 2: return sum(d_gh, {0});
      default: return d_state;
    }
  });
}

// -------------------------------------------------------------- backward
std::string RecurrentCellBackward::name() const { return std::string(cell_kind_name(cell)) + "_cell_backward"; }

std::vector<TensorMeta> RecurrentCellBackward::infer(const std::vector<TensorMeta>& in) const {
  const std::string op = name();
  switch (cell) {
    case CellKind::RnnTanh:
    case CellKind::RnnRelu:
      LUCID_CHECK(in.size() == 2 && in[0].shape == in[1].shape && in[0].dtype == in[1].dtype, op,
                  ": expected (h', dh') of one shape and dtype");
      return {in[0]};
    case CellKind::Lstm: {
      LUCID_CHECK(in.size() == 7, op, ": expected 7 operands, got ", in.size());
      const Shape bh = check_cell_inputs(op.c_str(), cell, {in[0], in[1], in[2], in[3]});
      for (size_t k = 4; k < 7; ++k)
        LUCID_CHECK(in[k].shape == bh && in[k].dtype == in[0].dtype, op, ": operand ", k, " of shape ",
                    shape_str(in[k].shape), " does not match the state's ", shape_str(bh));
      return {in[0], in[3]};
    }
    case CellKind::Gru: {
      LUCID_CHECK(in.size() == 5, op, ": expected 5 operands, got ", in.size());
      const Shape bh = check_cell_inputs(op.c_str(), cell, {in[0], in[1], in[2], in[3]});
      LUCID_CHECK(in[4].shape == bh && in[4].dtype == in[0].dtype, op, ": gradient of shape ",
                  shape_str(in[4].shape), " does not match the state's ", shape_str(bh));
      return {in[0], in[1], in[3]};
    }
  }
  fail("unknown cell kind");
}

std::vector<Tensor> RecurrentCellBackward::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                               const std::vector<Tensor>&, const std::vector<int>&) const {
  // RecurrentCell's vjp records ops instead of this kernel when a backward records history.
  fail<NotImplementedError>(cell_kind_name(cell), "_cell_backward: gradients of the backward kernel are not supported");
}

// ----------------------------------------------------------------- ops
// Every operand in the dtype they promote to (autocast may hand the
// projections in 16 bits while the state stays float32).
static std::vector<Tensor> promoted(std::vector<Tensor> ts) {
  DType dt = ts[0].dtype();
  for (const auto& t : ts) dt = promote_types(dt, t.dtype());
  for (auto& t : ts) t = cast(t, dt);
  return ts;
}

Tensor rnn_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, bool relu) {
  return call<RecurrentCell>(promoted({gi, gh, bias}), relu ? CellKind::RnnRelu : CellKind::RnnTanh);
}

std::pair<Tensor, Tensor> lstm_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, const Tensor& c) {
  auto out = call_multi<RecurrentCell>(promoted({gi, gh, bias, c}), CellKind::Lstm);
  return {out[0], out[1]};
}

Tensor gru_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, const Tensor& h) {
  return call<RecurrentCell>(promoted({gi, gh, bias, h}), CellKind::Gru);
}

}  // namespace lucid
