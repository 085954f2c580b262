#pragma once
// The numbers of a GradScaler (torch.amp.GradScaler's contract): the loss
// scale, set lazily from init_scale, and the growth/backoff bookkeeping.
// Python's lucid.amp.GradScaler keeps its state in one of these, and a
// compiled step with a scaler reads the scale as a feed and applies update()
// after its run, in the same C++ call.
#include <cstdint>
#include <optional>

namespace lucid::compile {

class GradScalerState {
 public:
  GradScalerState(double init_scale = 65536.0, double growth_factor = 2.0, double backoff_factor = 0.5,
                  int64_t growth_interval = 2000, bool enabled = true);

  bool enabled;
  double init_scale;
  std::optional<float> scale;  // unset until the first use, as in torch
  double growth_factor, backoff_factor;
  int64_t growth_interval;
  int64_t init_growth_tracker = 0;
  std::optional<int64_t> growth_tracker;

  // Sets the scale and the growth tracker from their initial values if unset.
  void lazy_init();
  // The current scale (init_scale before the first use; 1 when disabled).
  double get_scale() const;
  // torch's _amp_update_scale_ in float32: back off after an overflow, grow
  // after growth_interval clean steps in a row.
  void update(bool found_inf);
};

}  // namespace lucid::compile
