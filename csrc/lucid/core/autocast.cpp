#include "lucid/core/autocast.h"

namespace lucid {

static thread_local AutocastState t_state;

AutocastState autocast_state() { return t_state; }
void set_autocast_state(AutocastState s) { t_state = s; }

DType autocast_lower_dtype(DType t) {
  if (!t_state.enabled || !is_floating(t) || t == DType::Float64) return t;
  return t_state.dtype;
}

}  // namespace lucid
