#pragma once
// The optimizer kinds (one traits struct each, in kinds_*.cpp) and the
// checks their validation rules share.
#include <string>

#include "lucid/core/error.h"
#include "lucid/optim/engine.h"

namespace lucid::optim {

const Algorithm& sgd_algorithm();
const Algorithm& rmsprop_algorithm();
const Algorithm& adagrad_algorithm();
const Algorithm& adam_algorithm();  // Adam and AdamW (decoupled_weight_decay)
const Algorithm& adamax_algorithm();
const Algorithm& nadam_algorithm();
const Algorithm& radam_algorithm();
const Algorithm& adadelta_algorithm();
const Algorithm& asgd_algorithm();
const Algorithm& rprop_algorithm();
const Algorithm& sparse_adam_algorithm();
const Algorithm& lbfgs_bb_algorithm();

// `what` is torch's wording, e.g. "learning rate" -> "Invalid learning rate: -1.0".
inline void check_nonnegative(const Hyper& h, const char* key, const char* what) {
  if (!(0.0 <= h.num(key))) fail("Invalid ", what, ": ", h.repr(key));
}
inline void check_lr(const Hyper& h) { check_nonnegative(h, "lr", "learning rate"); }
inline void check_betas(const Hyper& h) {
  for (size_t i = 0; i < 2; ++i) {
    const double b = h.num("betas", i);
    if (!(0.0 <= b && b < 1.0)) fail("Invalid beta parameter at index ", i, ": ", h.repr("betas", i));
  }
}

// A*B for a per-parameter scalar held as torch holds it: a 0-d tensor of
// st.scalar_dtype (float32 unless the default dtype is float64 or a
// checkpoint was loaded into a float64 parameter) multiplied in its dtype.
double state_mul(const ParamState& st, double a, double b);

}  // namespace lucid::optim
