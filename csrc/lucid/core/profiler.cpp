#include "lucid/core/profiler.h"

#include <chrono>
#include <mutex>

#include "lucid/core/error.h"

namespace lucid::profiler {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {
std::mutex g_mutex;
std::vector<Event> g_events;
bool g_record_shapes = false;
std::atomic<uint64_t> g_next_thread{0};
}  // namespace

bool records_shapes() { return g_record_shapes; }

void enable(bool record_shapes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  LUCID_CHECK(!detail::g_enabled.load(), "the profiler is already enabled on this process");
  g_events.clear();
  g_record_shapes = record_shapes;
  detail::g_enabled.store(true);
}

std::vector<Event> disable() {
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_enabled.store(false);
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t thread_id() {
  static thread_local const uint64_t id = g_next_thread.fetch_add(1);
  return id;
}

void record(Event e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (detail::g_enabled.load()) g_events.push_back(std::move(e));
}

Scope::Scope(std::string name, std::vector<std::vector<int64_t>> input_shapes) {
  if (!enabled()) return;
  event_.name = std::move(name);
  event_.input_shapes = std::move(input_shapes);
  event_.thread = thread_id();
  event_.start_ns = now_ns();
}

Scope::~Scope() {
  if (event_.name.empty()) return;
  event_.end_ns = now_ns();
  record(std::move(event_));
}

}  // namespace lucid::profiler
