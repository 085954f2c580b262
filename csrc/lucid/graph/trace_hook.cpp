#include "lucid/graph/trace_hook.h"

#include <atomic>

namespace lucid::graph {

static thread_local Tracer* t_current = nullptr;
static std::atomic<uint64_t> g_next_trace_id{1};

Tracer::Tracer() : id_(g_next_trace_id.fetch_add(1)) {}
Tracer* Tracer::current() { return t_current; }
void Tracer::set_current(Tracer* t) { t_current = t; }

}  // namespace lucid::graph
