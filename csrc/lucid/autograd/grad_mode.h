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

struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace lucid::autograd
