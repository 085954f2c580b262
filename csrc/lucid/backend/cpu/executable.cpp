// The CPU executable: a static schedule of kernel calls over one pre-planned
// arena. Per run it binds the arguments, calls the kernels in order on raw
// pointers (no allocation, no dispatch, no Python) and performs writebacks.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <sstream>

#include "lucid/backend/cpu/fusion.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/memory_plan.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

using graph::Graph;
using graph::ValueKind;

constexpr size_t kAlign = 64;
using graph::ArenaPlanner;
using graph::contiguous_view_offset;
using graph::is_elementwise;

// Where a value's bytes live during a run.
struct Location {
  enum Kind : uint8_t { Arena, Input, Feed, Capture, Alias } kind = Arena;
  int64_t index = 0;   // arena offset / input, feed or capture index / aliased value id
  size_t offset = 0;   // Alias: bytes into the aliased value
};

class CpuExecutable final : public graph::Executable {
 public:
  CpuExecutable(Graph g, std::vector<graph::RandomKeyFeed> rf) : Executable(std::move(g), std::move(rf)) { plan(); }

  std::string describe() const override {
    std::ostringstream os;
    os << "cpu executable: " << steps_.size() << " steps (" << groups_.size() << " fused groups) for "
       << graph_.nodes.size() << " nodes, arena " << arena_bytes_ << " bytes, "
       << graph_.captures.size() << " captured buffers, " << graph_.writebacks.size() << " writebacks ("
       << direct_writes_ << " in place)";
    return os.str();
  }

 private:
  // One entry of the schedule: a kernel call, or a fused elementwise group.
  struct Step {
    int node = -1;    // >= 0: a single kernel
    int group = -1;   // >= 0: index into groups_
  };

  void plan() {
    const int nv = int(graph_.values.size());
    const int nn = int(graph_.nodes.size());
    loc_.assign(size_t(nv), {});
    for (size_t i = 0; i < graph_.inputs.size(); ++i) loc_[graph_.inputs[i]] = {Location::Input, int64_t(i)};
    for (size_t i = 0; i < graph_.feeds.size(); ++i) loc_[graph_.feeds[i]] = {Location::Feed, int64_t(i)};
    for (size_t i = 0; i < graph_.captures.size(); ++i)
      loc_[graph_.captures[i].value] = {Location::Capture, int64_t(i)};

    // Views that are contiguous in their input (reshapes, slices of whole
    // rows, a tensor read out of its storage) alias the input's bytes.
    std::vector<bool> is_view(size_t(nn), false);
    for (int i = 0; i < nn; ++i) {
      const graph::Node& n = graph_.nodes[i];
      const int64_t offset = contiguous_view_offset(graph_, n);
      if (offset < 0) continue;
      is_view[i] = true;
      const TensorMeta& m = graph_.values[n.outputs[0]].meta;
      loc_[n.outputs[0]] = {Location::Alias, n.inputs[0], size_t(offset) * itemsize(m.dtype)};
    }
    auto root = [&](int v) {
      while (loc_[v].kind == Location::Alias) v = int(loc_[v].index);
      return v;
    };

    // Last reading node of each value; outputs and writeback sources live to the end.
    std::vector<int> last_use(size_t(nv), -1);
    for (int i = 0; i < nn; ++i)
      for (int v : graph_.nodes[i].inputs) last_use[v] = std::max(last_use[v], i);
    for (int o : graph_.outputs) last_use[o] = nn;
    for (const auto& w : graph_.writebacks) last_use[w.value] = nn;
    // A reshape's readers read its root too.
    for (int v = nv - 1; v >= 0; --v)
      if (loc_[v].kind == Location::Alias) last_use[root(v)] = std::max(last_use[root(v)], last_use[v]);

    // Schedule: fused groups replace their member nodes (at the last member).
    groups_ = plan_fusion(graph_, last_use, /*sixteen_bit=*/true);
    std::vector<int> group_of(size_t(nn), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (int m : groups_[gi].nodes) group_of[m] = int(gi);
    std::vector<int> step_of_node(size_t(nn), 0), group_step(groups_.size(), -1);
    for (int i = 0; i < nn; ++i) {
      if (is_view[i]) {
        step_of_node[i] = int(steps_.size());  // a view: "runs" with the next step
        continue;
      }
      if (group_of[i] >= 0) {
        if (groups_[group_of[i]].nodes.back() == i) {
          group_step[group_of[i]] = int(steps_.size());
          steps_.push_back({-1, group_of[i]});
        }
        continue;
      }
      step_of_node[i] = int(steps_.size());
      steps_.push_back({i, -1});
    }
    for (int i = 0; i < nn; ++i)  // members execute with their group
      if (group_of[i] >= 0) step_of_node[i] = group_step[group_of[i]];
    const int ns = int(steps_.size());
    // Lifetimes in steps (root values only).
    // Every reader counts, not just the last one by node index: a member of a
    // fused group runs at its group's step, after nodes recorded later.
    std::vector<int> last_step(size_t(nv), -1);
    for (int i = 0; i < nn; ++i)
      for (int v : graph_.nodes[i].inputs) last_step[root(v)] = std::max(last_step[root(v)], step_of_node[i]);
    for (int o : graph_.outputs) last_step[root(o)] = ns;
    for (const auto& w : graph_.writebacks) last_step[root(w.value)] = ns;
    std::vector<bool> materialized(size_t(nv), true);
    for (const auto& grp : groups_) {
      for (int m : grp.nodes) materialized[graph_.nodes[m].outputs[0]] = false;
      for (const auto& o : grp.outputs) materialized[o.value] = true;
    }

    // A writeback whose value is made elementwise after every read of the old
    // contents is computed straight into the captured buffer.
    // (A buffer is captured as one 1-D tensor: the written value is usually
    // a reshape of the value computed.)
    auto nbytes = [&](int v) { return size_t(graph_.values[v].meta.numel()) * itemsize(graph_.values[v].meta.dtype); };
    std::vector<int> direct_target(size_t(nv), -1);
    for (const auto& w : graph_.writebacks) {
      const int cap_value = graph_.captures[w.capture].value;
      int value = w.value;
      while (loc_[value].kind == Location::Alias && loc_[value].offset == 0 && nbytes(int(loc_[value].index)) == nbytes(value))
        value = int(loc_[value].index);
      const graph::Value& v = graph_.values[value];
      if (v.kind != ValueKind::Node || loc_[value].kind == Location::Alias) continue;
      const int producer_step = step_of_node[v.producer];
      if (!is_elementwise(graph_.nodes[v.producer].prim->kind()) || nbytes(value) != nbytes(cap_value) ||
          v.meta.dtype != graph_.values[cap_value].meta.dtype)
        continue;
      if (last_step[cap_value] > producer_step) continue;
      // Inside a fused group, members after the producer must not read the
      // old contents: they would see the new values of the same tile.
      if (group_of[v.producer] >= 0) {
        const auto& members = groups_[group_of[v.producer]].nodes;
        bool read_later = false;
        for (auto it = std::find(members.begin(), members.end(), v.producer) + 1; it != members.end(); ++it)
          for (int in : graph_.nodes[*it].inputs) read_later |= root(in) == cap_value;
        if (read_later) continue;
      }
      bool shared = false;
      for (const auto& w2 : graph_.writebacks) shared |= (&w2 != &w && root(w2.value) == root(w.value));
      if (shared || direct_target[value] >= 0) continue;
      direct_target[value] = w.capture;
      ++direct_writes_;
    }

    ArenaPlanner arena;
    std::vector<std::vector<int>> frees_at(size_t(ns) + 1);
    auto place = [&](int o, int s) {
      if (!materialized[o] || loc_[o].kind == Location::Alias) return;
      if (direct_target[o] >= 0) {
        loc_[o] = {Location::Capture, direct_target[o]};
        return;
      }
      const size_t bytes = size_t(graph_.values[o].meta.numel()) * itemsize(graph_.values[o].meta.dtype);
      loc_[o] = {Location::Arena, int64_t(arena.allocate(bytes))};
      const int end = std::max(last_step[o], s);  // unread values die with their step
      if (end < ns) frees_at[end].push_back(o);
    };
    for (int s = 0; s < ns; ++s) {
      if (steps_[s].node >= 0) {
        for (int o : graph_.nodes[steps_[s].node].outputs) place(o, s);
      } else {
        for (const auto& o : groups_[steps_[s].group].outputs) place(o.value, s);
      }
      for (int v : frees_at[s]) {
        const size_t bytes = size_t(graph_.values[v].meta.numel()) * itemsize(graph_.values[v].meta.dtype);
        arena.release(size_t(loc_[v].index), bytes);
      }
    }
    arena_bytes_ = arena.size();
    arena_ = Tensor::empty({int64_t(arena_bytes_ + kAlign)}, DType::Bool, Device{});
    resolved_root_.resize(size_t(nv));
    resolved_offset_.assign(size_t(nv), 0);
    for (int v = 0; v < nv; ++v) {
      resolved_root_[v] = root(v);
      for (int a = v; loc_[a].kind == Location::Alias; a = int(loc_[a].index)) resolved_offset_[v] += loc_[a].offset;
    }
    kernels_.assign(size_t(nn), nullptr);
    for (const auto& st : steps_)
      if (st.node >= 0) kernels_[st.node] = find_kernel(*graph_.nodes[st.node].prim, DeviceType::CPU);
  }

  void* address(int v, const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) const {
    const Location& l = loc_[resolved_root_[v]];
    char* base = nullptr;
    switch (l.kind) {
      case Location::Arena: base = static_cast<char*>(arena_.raw_data()) + l.index; break;
      case Location::Input: base = static_cast<char*>(inputs[l.index].raw_data()); break;
      case Location::Feed: base = static_cast<char*>(feeds[l.index].raw_data()); break;
      case Location::Capture: base = static_cast<char*>(graph_.captures[l.index].storage->data()); break;
      case Location::Alias: break;
    }
    return base + resolved_offset_[v];
  }

  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) override {
    // Argument lists reused from run to run (no allocation per step).
    thread_local std::vector<ConstArg> in_args;
    thread_local std::vector<MutArg> out_args;
    thread_local std::vector<const void*> fin;
    thread_local std::vector<void*> fout;
    using Clock = std::chrono::steady_clock;
    Clock::time_point t0;
    for (size_t si = 0; si < steps_.size(); ++si) {
      const Step& st = steps_[si];
      if (profiling_) {
        if (si > 0) step_seconds_[si - 1] += std::chrono::duration<double>(Clock::now() - t0).count();
        t0 = Clock::now();
      }
      if (st.group >= 0) {
        const FusedGroup& grp = groups_[st.group];
        fin.clear();
        fout.clear();
        for (const auto& in : grp.inputs) fin.push_back(address(in.value, inputs, feeds));
        for (const auto& o : grp.outputs) fout.push_back(address(o.value, inputs, feeds));
        run_fused(grp, fin, fout);
        continue;
      }
      const graph::Node& n = graph_.nodes[st.node];
      in_args.clear();
      out_args.clear();
      for (int v : n.inputs) in_args.push_back({address(v, inputs, feeds), &graph_.values[v].meta});
      for (int v : n.outputs) out_args.push_back({address(v, inputs, feeds), &graph_.values[v].meta});
      kernels_[st.node](*n.prim, in_args, out_args);
    }
    if (profiling_ && !steps_.empty()) {
      step_seconds_.back() += std::chrono::duration<double>(Clock::now() - t0).count();
      ++profiled_runs_;
    }
    for (const auto& w : graph_.writebacks) {
      void* dst = graph_.captures[w.capture].storage->data();
      const void* src = address(w.value, inputs, feeds);
      if (dst != src) {
        const TensorMeta& m = graph_.values[w.value].meta;
        std::memcpy(dst, src, size_t(m.numel()) * itemsize(m.dtype));
      }
      graph_.captures[w.capture].storage->bump_version();
    }
    std::vector<Tensor> outs;
    for (int o : graph_.outputs) {
      const TensorMeta& m = graph_.values[o].meta;
      Tensor t = Tensor::empty(m.shape, m.dtype, m.device);
      std::memcpy(t.raw_data(), address(o, inputs, feeds), t.nbytes());
      outs.push_back(t);
    }
    return outs;
  }

  void set_profiling(bool on) override {
    profiling_ = on;
    step_seconds_.assign(steps_.size(), 0.0);
    profiled_runs_ = 0;
  }
  uint64_t profiled_runs() const override { return profiled_runs_; }
  std::vector<ProfileEntry> profile() const override {
    std::vector<ProfileEntry> out;
    for (size_t s = 0; s < step_seconds_.size(); ++s) out.push_back({step_label(steps_[s]), step_seconds_[s]});
    return out;
  }

  std::string step_label(const Step& st) const {
    std::ostringstream os;
    auto shapes = [&](const std::vector<int>& vs) {
      for (size_t i = 0; i < vs.size(); ++i) os << (i ? ", " : "") << shape_str(graph_.values[vs[i]].meta.shape);
    };
    if (st.node >= 0) {
      const graph::Node& n = graph_.nodes[st.node];
      os << n.prim->name() << " ";
      shapes(n.outputs);
      os << " <- ";
      shapes(n.inputs);
    } else {
      const FusedGroup& grp = groups_[st.group];
      os << "fused x" << grp.numel << " [";
      for (size_t i = 0; i < grp.nodes.size(); ++i) os << (i ? " " : "") << graph_.nodes[grp.nodes[i]].prim->name();
      os << "]";
    }
    return os.str();
  }

  std::vector<Step> steps_;
  bool profiling_ = false;
  std::vector<double> step_seconds_;
  uint64_t profiled_runs_ = 0;
  std::vector<FusedGroup> groups_;
  std::vector<Location> loc_;
  std::vector<int> resolved_root_;
  std::vector<size_t> resolved_offset_;  // bytes into the root's buffer
  std::vector<Kernel> kernels_;
  Tensor arena_;
  size_t arena_bytes_ = 0;
  int direct_writes_ = 0;
};

std::shared_ptr<graph::Executable> compile_cpu(Graph g, std::vector<graph::RandomKeyFeed> rf) {
  return std::make_shared<CpuExecutable>(std::move(g), std::move(rf));
}

struct Registrar {
  Registrar() { graph::register_compiler(DeviceType::CPU, compile_cpu); }
} registrar;

}  // namespace

}  // namespace lucid::cpu
