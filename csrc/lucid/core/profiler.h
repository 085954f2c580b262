#pragma once
// The eager profiler's recorder. While it is on, every primitive run eagerly
// (dispatch.cpp), every backward node (engine.cpp) and every region a user
// names (lucid.profiler.record_function) leaves one timed event; the Python
// layer turns the events into PyTorch's tables and Chrome traces. Off, the
// cost is one relaxed atomic load per op.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace lucid::profiler {

struct Event {
  std::string name;
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint64_t thread = 0;   // a small id per OS thread, in order of first event
  std::vector<std::vector<int64_t>> input_shapes;  // when shapes are recorded
};

namespace detail {
extern std::atomic<bool> g_enabled;
}
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }
bool records_shapes();

// Starts recording (clearing earlier events); fails if already on.
void enable(bool record_shapes);
// Stops recording and hands the events over, in the order they ended.
std::vector<Event> disable();

int64_t now_ns();
uint64_t thread_id();
void record(Event e);

// Times its own lifetime as one event (if the profiler was on at its start).
class Scope {
 public:
  explicit Scope(std::string name, std::vector<std::vector<int64_t>> input_shapes = {});
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Event event_;
};

}  // namespace lucid::profiler
