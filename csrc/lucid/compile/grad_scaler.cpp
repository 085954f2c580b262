#include "lucid/compile/grad_scaler.h"

#include <cmath>

namespace lucid::compile {

GradScalerState::GradScalerState(double init_scale, double growth_factor, double backoff_factor,
                                 int64_t growth_interval, bool enabled)
    : enabled(enabled), init_scale(init_scale), growth_factor(growth_factor), backoff_factor(backoff_factor),
      growth_interval(growth_interval) {}

void GradScalerState::lazy_init() {
  if (scale) return;
  scale = float(init_scale);
  growth_tracker = init_growth_tracker;
}

double GradScalerState::get_scale() const {
  if (!enabled) return 1.0;
  return scale ? double(*scale) : init_scale;
}

void GradScalerState::update(bool found_inf) {
  lazy_init();
  if (found_inf) {
    scale = *scale * float(backoff_factor);
    growth_tracker = 0;
    return;
  }
  growth_tracker = *growth_tracker + 1;
  if (*growth_tracker == growth_interval) {
    const float grown = *scale * float(growth_factor);
    if (std::isfinite(grown)) scale = grown;  // torch keeps the scale when growing would overflow
    growth_tracker = 0;
  }
}

}  // namespace lucid::compile
