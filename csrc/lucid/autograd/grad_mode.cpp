#include "lucid/autograd/grad_mode.h"

#include <atomic>

namespace lucid::autograd {

static thread_local bool t_grad_enabled = true;
bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

static std::atomic<bool> g_anomaly_enabled{false}, g_anomaly_check_nan{true};
bool AnomalyMode::is_enabled() { return g_anomaly_enabled.load(); }
bool AnomalyMode::check_nan() { return g_anomaly_check_nan.load(); }
bool AnomalyMode::should_check_nan() { return g_anomaly_enabled.load() && g_anomaly_check_nan.load(); }
void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  g_anomaly_enabled = enabled;
  g_anomaly_check_nan = check_nan;
}

}  // namespace lucid::autograd
