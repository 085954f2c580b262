#pragma once
// Autocast state (lucid.amp.autocast): thread-local, like grad mode. While
// enabled, the ops PyTorch runs in lower precision (matmul and the layers
// built on it) cast their floating inputs to `dtype`; ops on PyTorch's
// float32 list cast low-precision inputs up.
#include "lucid/core/dtype.h"

namespace lucid {

struct AutocastState {
  bool enabled = false;
  DType dtype = DType::BFloat16;
};

AutocastState autocast_state();
void set_autocast_state(AutocastState s);

// `dtype` when autocast is on and `t` is a float32/16-bit float (float64 is
// left alone, as in PyTorch); `t` itself otherwise.
DType autocast_lower_dtype(DType t);

}  // namespace lucid
