#pragma once
// The gate math of one recurrent step (RNN, LSTM, GRU) as one primitive per
// direction: a dozen elementwise ops per step become one pass over the
// gates, eagerly and in a compiled step alike. The two GEMMs of a step (the
// input and hidden projections) stay ordinary matmuls; the biases of the
// hidden projection are added here, in PyTorch's order, so results match
// its CPU cells.
#include "lucid/ops/ops.h"
#include "lucid/ops/primitives.h"  // LUCID_PRIMITIVE_COMMON / _ATTRS

namespace lucid {

enum class CellKind : uint8_t { RnnTanh, RnnRelu, Lstm, Gru };
const char* cell_kind_name(CellKind k);
// Gates per hidden unit: 1 (RNN), 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n).
int cell_gates(CellKind k);

// Inputs: gi [B, G*H] (input projection, its bias included), gh [B, G*H]
// (hidden projection, no bias), bias [G*H] (the hidden projection's bias),
// and for LSTM the cell state c [B, H], for GRU the hidden state h [B, H].
// Outputs: h' [B, H]; for LSTM also c' [B, H].
//   RNN:  h' = act((gh + b) + gi)
//   LSTM: (i, f, g, o) = (sig, sig, tanh, sig)((gh + b) + gi);
//         c' = f c + i g;  h' = o tanh(c')
//   GRU:  r = sig((gh_r + b_r) + gi_r); z = sig((gh_z + b_z) + gi_z);
//         n = tanh(gi_n + r (gh_n + b_n));  h' = (h - n) z + n
struct RecurrentCell final : Primitive {
  CellKind cell;
  auto attrs() const { return std::tie(cell); }
  explicit RecurrentCell(CellKind cell) : Primitive(OpKind::RecurrentCell), cell(cell) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override;
};

// RecurrentCell's VJP, recomputing the gates from the saved inputs:
//   RNN:  (h', dh') -> d_pre [B, H]                       (d gi = d gh = d_pre)
//   LSTM: (gi, gh, bias, c, c', dh', dc') -> (d_pre [B, 4H], dc [B, H])
//   GRU:  (gi, gh, bias, h, dh') -> (d gi [B, 3H], d gh [B, 3H], dh [B, H])
struct RecurrentCellBackward final : Primitive {
  CellKind cell;
  auto attrs() const { return std::tie(cell); }
  explicit RecurrentCellBackward(CellKind cell) : Primitive(OpKind::RecurrentCellBackward), cell(cell) {}
  LUCID_PRIMITIVE_COMMON
  LUCID_PRIMITIVE_ATTRS
  uint8_t saved() const override { return 0; }
};

// One step of each cell. `gi`, `gh` [B, G*H], `bias` [G*H] (zeros for a cell
// without biases). Operands of mixed floating dtypes (autocast) are computed
// in their promoted dtype.
Tensor rnn_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, bool relu);
std::pair<Tensor, Tensor> lstm_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, const Tensor& c);
Tensor gru_cell_step(const Tensor& gi, const Tensor& gh, const Tensor& bias, const Tensor& h);

}  // namespace lucid
