#pragma once

namespace lucid::autograd {

// Thread-local switch for recording history (torch.no_grad / enable_grad).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~GradModeGuard() { GradMode::set_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

// Anomaly detection (torch.autograd.detect_anomaly), process-wide as
// PyTorch's: while on with check_nan, backward raises at the first node that
// returns a NaN gradient, naming it.
struct AnomalyMode {
  static bool is_enabled();
  static bool check_nan();         // the flag, as torch.is_anomaly_check_nan_enabled reads it
  static bool should_check_nan();  // enabled and check_nan
  static void set_enabled(bool enabled, bool check_nan = true);
};

struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace lucid::autograd
