// The CUDA executable: the same static schedule over one pre-planned device
// arena as the CPU's, each node one launch of the cuda kernel the eager
// dispatcher would run and each fused elementwise group (the CPU's fusion
// plan) one generated NVRTC kernel, captured once into a CUDA graph and
// replayed per call.
//
// Everything a run reads lives at an address fixed when the graph is
// captured: the scalar feeds (learning rates, bias corrections, the loss
// scale, random keys), any host-side captured constants and the addresses of
// the call's arguments and results are staged into one device block with one
// host-to-device copy per call (none when nothing changed), so a new learning
// rate or a new batch never needs a new capture. The graph's first kernel
// copies the arguments into arena slots and its last the results out, so a
// call is that upload and one graph launch. Captured device buffers
// (parameters, optimizer state) are read and written where they live; a call
// that finds one rebound (a per-call .grad that is a new tensor) captures
// again.
//
// The first call runs the schedule as plain launches (loading every kernel
// module and cuBLAS outside any capture), then captures it. A schedule that
// cannot be captured (a kernel that synchronises, say) keeps running as plain
// launches; describe() says why. LUCID_CUDA_GRAPHS=0 turns capture off,
// LUCID_CUDA_FUSION=0 the generated kernels (every node its own kernel).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "lucid/backend/cpu/fusion.h"
#include "lucid/backend/cuda/compiler.h"
#include "lucid/backend/cuda/runtime.h"
#include "lucid/core/profiler.h"
#include "lucid/graph/executable.h"
#include "lucid/graph/memory_plan.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cuda {

namespace {

using graph::Graph;
using graph::ValueKind;

constexpr size_t kAlign = 256;  // cuBLAS and vector loads like 256-byte aligned operands
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL_ = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;

bool graphs_enabled() {
  const char* v = std::getenv("LUCID_CUDA_GRAPHS");
  return !(v && std::strcmp(v, "0") == 0);
}

bool fusion_enabled() {
  const char* v = std::getenv("LUCID_CUDA_FUSION");
  return !(v && std::strcmp(v, "0") == 0);
}

// A fused group as one kernel: each thread takes elements i of the group's
// index space, loads its inputs into float registers (bools as 0/1, as the
// CPU's fused pass keeps them), runs the group's instructions with the
// eager kernels' device functions, and stores the outputs.
std::string group_source(const cpu::FusedGroup& g, int k) {
  std::ostringstream os;
  const size_t ni = std::max<size_t>(g.inputs.size(), 1);
  os << "struct FusedArgs" << k << " { i64 n; const void* in[" << ni << "]; void* out[" << g.outputs.size()
     << "]; };\nextern \"C\" __global__ void fused_" << k << "(const FusedArgs" << k << " a) {\n"
     << "  for (i64 i = global_index(); i < a.n; i += global_stride()) {\n";
  for (int r = 0; r < g.num_regs; ++r) os << "    float r" << r << " = 0.f;\n";
  for (size_t j = 0; j < g.inputs.size(); ++j) {
    const cpu::FusedInput& in = g.inputs[j];
    std::string index = "i";
    if (in.scalar) {
      index = "0";
    } else if (in.broadcast()) {
      os << "    i64 o" << j << " = 0;\n    { i64 t = i;";
      for (size_t d = in.dims.size(); d-- > 0;) {
        if (d == 0) os << " o" << j << " += t * " << in.strides[d] << "LL;";
        else os << " o" << j << " += (t % " << in.dims[d] << "LL) * " << in.strides[d] << "LL; t /= " << in.dims[d] << "LL;";
      }
      os << " }\n";
      index = "o" + std::to_string(j);
    }
    if (in.dtype == DType::Bool) os << "    r" << in.reg << " = ((const bool*)a.in[" << j << "])[" << index << "] ? 1.f : 0.f;\n";
    else os << "    r" << in.reg << " = ((const float*)a.in[" << j << "])[" << index << "];\n";
  }
  for (const cpu::FusedInstr& ins : g.code) {
    os << "    r" << ins.dst << " = ";
    const int op = ins.op;
    switch (ins.kind) {
      case OpKind::Unary:
        if (unary_returns_bool(UnaryOp(op))) os << "unary_predicate<float>(" << op << ", r" << ins.src[0] << ") ? 1.f : 0.f";
        else os << "unary_apply<float>(" << op << ", r" << ins.src[0] << ")";
        break;
      case OpKind::Binary:
        if (binary_returns_bool(BinaryOp(op)))
          os << "binary_predicate<float>(" << op << ", r" << ins.src[0] << ", r" << ins.src[1] << ") ? 1.f : 0.f";
        else os << "binary_apply(" << op << ", r" << ins.src[0] << ", r" << ins.src[1] << ")";
        break;
      case OpKind::Where: os << "r" << ins.src[0] << " != 0.f ? r" << ins.src[1] << " : r" << ins.src[2]; break;
      case OpKind::Cast:  // float32 <-> bool: to bool is x != 0
        if (op) os << "r" << ins.src[0] << " != 0.f ? 1.f : 0.f";
        else os << "r" << ins.src[0];
        break;
      default: fail<Error>("internal: a fused group holds an instruction of kind ", int(ins.kind));
    }
    os << ";\n";
  }
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const cpu::FusedOutput& o = g.outputs[j];
    if (o.dtype == DType::Bool) os << "    ((bool*)a.out[" << j << "])[i] = r" << o.reg << " != 0.f;\n";
    else os << "    ((float*)a.out[" << j << "])[i] = r" << o.reg << ";\n";
  }
  os << "  }\n}\n";
  return os.str();
}

// The fusion plan of `g` (the CPU executable's): lifetimes by node, a
// contiguous view's readers counting as readers of what it views.
std::vector<cpu::FusedGroup> plan_groups(const Graph& g) {
  const int nv = int(g.values.size()), nn = int(g.nodes.size());
  std::vector<int> viewed(size_t(nv), -1);
  for (int i = 0; i < nn; ++i)
    if (graph::contiguous_view_offset(g, g.nodes[i]) >= 0) viewed[g.nodes[i].outputs[0]] = g.nodes[i].inputs[0];
  auto root = [&](int v) {
    while (viewed[v] >= 0) v = viewed[v];
    return v;
  };
  std::vector<int> last_use(size_t(nv), -1);
  for (int i = 0; i < nn; ++i)
    for (int v : g.nodes[i].inputs) last_use[v] = std::max(last_use[v], i);
  for (int o : g.outputs) last_use[o] = nn;
  for (const auto& w : g.writebacks) last_use[w.value] = nn;
  for (int v = nv - 1; v >= 0; --v)
    if (viewed[v] >= 0) last_use[root(v)] = std::max(last_use[root(v)], last_use[v]);
  return cpu::plan_fusion(g, last_use, /*sixteen_bit=*/false);  // the generated code reads float32 and bool
}

// The groups' kernels, one per distinct group (the layers of a deep model
// repeat the same groups): kernel `fused_<kernel_of[k]>` runs group k.
struct GroupKernels {
  std::vector<std::string> sources;  // kernel u's definition
  std::vector<int> kernel_of;        // by group
};

GroupKernels group_kernels(const std::vector<cpu::FusedGroup>& groups) {
  GroupKernels out;
  std::unordered_map<std::string, int> seen;  // a group's source as kernel 0 -> its kernel
  for (const cpu::FusedGroup& g : groups) {
    auto [it, added] = seen.emplace(group_source(g, 0), int(out.sources.size()));
    if (added) out.sources.push_back(group_source(g, it->second));
    out.kernel_of.push_back(it->second);
  }
  return out;
}

std::string module_source(const std::vector<cpu::FusedGroup>& groups) {
  std::string source;
  for (const std::string& kernel : group_kernels(groups).sources) source += kernel;
  return source;
}

// Uploads the staged block (feeds, host constants) through a few pinned
// buffers used in turn: an asynchronous copy, where one from pageable memory
// waits for the driver to stage it, and the next call fills the next buffer
// while this copy may still be queued. Bytes equal to the last upload's are
// not uploaded again (nothing on the device writes the staged block).
class StagedUpload {
 public:
  StagedUpload() = default;
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;
  ~StagedUpload() {
    const DriverApi& d = driver();
    for (int k = 0; k < kBuffers; ++k) {
      if (done_[k]) {
        d.cuEventSynchronize(done_[k]);  // no copy reads the buffer any more
        d.cuEventDestroy(done_[k]);
      }
      if (host_[k]) d.cuMemFreeHost(host_[k]);
    }
  }

  void upload(void* device, const std::vector<char>& bytes, CUstream stream) {
    if (bytes.empty() || bytes == last_) return;
    const DriverApi& d = driver();
    const int k = next_;
    if (!host_[k]) {
      check(d.cuMemHostAlloc(reinterpret_cast<void**>(&host_[k]), bytes.size(), 0), "cuMemHostAlloc");
      check(d.cuEventCreate(&done_[k], 2 /* CU_EVENT_DISABLE_TIMING */), "cuEventCreate");
    } else {
      check(d.cuEventSynchronize(done_[k]), "cuEventSynchronize");  // its last copy has run
    }
    std::memcpy(host_[k], bytes.data(), bytes.size());
    profiler::Scope copy("cuMemcpyHtoDAsync");
    check(d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host_[k], bytes.size(), stream),
          "cuMemcpyHtoDAsync");
    check(d.cuEventRecord(done_[k], stream), "cuEventRecord");
    next_ = (k + 1) % kBuffers;
    last_ = bytes;
  }

 private:
  static constexpr int kBuffers = 3;
  char* host_[kBuffers] = {};
  CUevent done_[kBuffers] = {};
  int next_ = 0;
  std::vector<char> last_;
};

struct CopyListArgs {
  const uint64_t* table;
  int count;
};

// A staged copy_list table: the arguments (results) a call copies.
struct CopyTable {
  std::vector<size_t> positions;  // into the graph's inputs (outputs)
  size_t offset = 0;              // of the table in the staged block
  size_t max_bytes = 0;           // of the largest copy
};

// Where a value's bytes live during a run.
struct Location {
  enum Kind : uint8_t { Arena, Staged, Capture, Alias } kind = Arena;
  int64_t index = 0;   // arena / staged-block offset, capture index, or aliased value id
  size_t offset = 0;   // Alias: bytes into the aliased value
};

class CudaExecutable final : public graph::Executable {
 public:
  CudaExecutable(Graph g, std::vector<graph::RandomKeyFeed> rf) : Executable(std::move(g), std::move(rf)) {
    use_graphs_ = graphs_enabled();
    plan();
  }

  ~CudaExecutable() override {
    try {
      drop_graph();
    } catch (...) {
    }
  }

  std::string describe() const override {
    std::ostringstream os;
    os << "cuda executable: " << steps_.size() << " kernels (" << groups_.size() << " fused groups) for " << graph_.nodes.size() << " nodes, arena "
       << arena_bytes_ << " bytes, " << staged_bytes_ << " staged bytes, " << graph_.captures.size()
       << " captured buffers, " << graph_.writebacks.size() << " writebacks (" << direct_writes_
       << " in place); ";
    if (exec_) os << "CUDA graph captured (" << captures_made_ << " capture" << (captures_made_ == 1 ? "" : "s") << ")";
    else if (!use_graphs_) os << "CUDA graphs off (LUCID_CUDA_GRAPHS=0)";
    else if (!capture_error_.empty()) os << "not captured: " << capture_error_;
    else os << "not captured yet";
    return os.str();
  }

 private:
  void plan() {
    const int nv = int(graph_.values.size());
    const int nn = int(graph_.nodes.size());
    // Every value lives on the device, host scalars (feeds, and ops on them) included.
    metas_.resize(size_t(nv));
    for (int v = 0; v < nv; ++v) {
      metas_[v] = graph_.values[v].meta;
      metas_[v].device = Device{DeviceType::CUDA, 0};
    }
    auto nbytes = [&](int v) { return size_t(graph_.values[v].meta.numel()) * itemsize(graph_.values[v].meta.dtype); };
    loc_.assign(size_t(nv), {});
    graph::ArenaPlanner staged(16);
    for (size_t i = 0; i < graph_.feeds.size(); ++i) {
      const int v = graph_.feeds[i];
      loc_[v] = {Location::Staged, int64_t(staged.allocate(nbytes(v)))};
      stage_feeds_.push_back({int(i), size_t(loc_[v].index), nbytes(v)});
    }
    for (size_t c = 0; c < graph_.captures.size(); ++c) {
      const graph::Capture& cap = graph_.captures[c];
      if (cap.storage->device().type == DeviceType::CUDA) {
        loc_[cap.value] = {Location::Capture, int64_t(c)};
        continue;
      }
      LUCID_CHECK_T(NotImplementedError, !cap.bound_per_call,
                    "a compiled step on the cuda device cannot bind host memory per call");
      for (const auto& w : graph_.writebacks)
        LUCID_CHECK_T(NotImplementedError, w.capture != int(c),
                      "a compiled step on the cuda device cannot write host memory it captured (",
                      meta_str(graph_.values[cap.value].meta), ")");
      // A host constant the trace captured: staged with the feeds on every call.
      loc_[cap.value] = {Location::Staged, int64_t(staged.allocate(nbytes(cap.value)))};
      stage_captures_.push_back({int(c), size_t(loc_[cap.value].index), nbytes(cap.value)});
    }
    // Casts of a float feed to float32 (each hyper-parameter read by float32
    // math): computed on the host while staging (the same rounding), so the
    // schedule holds no kernel for them.
    std::vector<bool> on_host(size_t(nn), false);
    for (int i = 0; i < nn; ++i) {
      const graph::Node& n = graph_.nodes[i];
      if (n.prim->kind() != OpKind::Cast || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
      const graph::Value& in = graph_.values[n.inputs[0]];
      const int out = n.outputs[0];
      if (in.kind != ValueKind::Feed || graph_.values[out].meta.dtype != DType::Float32 ||
          (in.meta.dtype != DType::Float64 && in.meta.dtype != DType::Float32))
        continue;
      on_host[i] = true;
      loc_[out] = {Location::Staged, int64_t(staged.allocate(nbytes(out)))};
      host_casts_.push_back({in.index, size_t(loc_[out].index), size_t(in.meta.numel())});
    }
    // The call's copies, arguments in and device results out, as copy_list
    // tables staged with the feeds: the graph copies from and to the
    // addresses each call writes there.
    auto table = [&](CopyTable& t, const std::vector<int>& values) {
      for (size_t i = 0; i < values.size(); ++i) {
        if (graph_.values[values[i]].meta.device.type != DeviceType::CUDA) continue;
        t.positions.push_back(i);
        t.max_bytes = std::max(t.max_bytes, nbytes(values[i]));
      }
      if (!t.positions.empty()) t.offset = staged.allocate(3 * sizeof(uint64_t) * t.positions.size());
    };
    table(input_copies_, graph_.inputs);
    table(output_copies_, graph_.outputs);
    staged_bytes_ = staged.size();

    std::vector<bool> is_view(size_t(nn), false);
    for (int i = 0; i < nn; ++i) {
      const graph::Node& n = graph_.nodes[i];
      const int64_t offset = graph::contiguous_view_offset(graph_, n);
      if (offset < 0) continue;
      is_view[i] = true;
      loc_[n.outputs[0]] = {Location::Alias, n.inputs[0], size_t(offset) * itemsize(graph_.values[n.outputs[0]].meta.dtype)};
    }
    auto root = [&](int v) {
      while (loc_[v].kind == Location::Alias) v = int(loc_[v].index);
      return v;
    };

    // Fused elementwise groups: the CPU executable's plan, each group one
    // generated kernel here.
    if (fusion_enabled()) groups_ = plan_groups(graph_);
    std::vector<int> group_of(size_t(nn), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (int m : groups_[gi].nodes) group_of[m] = int(gi);

    // The schedule: every node but the in-place views, a group at its last member.
    std::vector<int> step_of_node(size_t(nn), 0), group_step(groups_.size(), -1);
    for (int i = 0; i < nn; ++i) {
      step_of_node[i] = int(steps_.size());  // a view "runs" with the next step
      if (is_view[i] || on_host[i]) continue;
      if (group_of[i] >= 0) {
        if (groups_[group_of[i]].nodes.back() == i) {
          group_step[group_of[i]] = int(steps_.size());
          steps_.push_back({-1, group_of[i]});
        }
        continue;
      }
      steps_.push_back({i, -1});
    }
    for (int i = 0; i < nn; ++i)  // members execute with their group
      if (group_of[i] >= 0) step_of_node[i] = group_step[group_of[i]];
    const int ns = int(steps_.size());
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
    // contents is computed straight into the captured buffer (as on the CPU).
    std::vector<int> direct_target(size_t(nv), -1);
    for (const auto& w : graph_.writebacks) {
      const int cap_value = graph_.captures[w.capture].value;
      if (loc_[cap_value].kind != Location::Capture) continue;
      int value = w.value;
      while (loc_[value].kind == Location::Alias && loc_[value].offset == 0 &&
             nbytes(int(loc_[value].index)) == nbytes(value))
        value = int(loc_[value].index);
      const graph::Value& v = graph_.values[value];
      if (v.kind != ValueKind::Node || loc_[value].kind != Location::Arena) continue;
      if (!graph::is_elementwise(graph_.nodes[v.producer].prim->kind()) || nbytes(value) != nbytes(cap_value) ||
          v.meta.dtype != graph_.values[cap_value].meta.dtype)
        continue;
      if (last_step[cap_value] > step_of_node[v.producer]) continue;
      // Inside a fused group, members after the producer must not read the
      // old contents: other threads may already have written theirs.
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

    graph::ArenaPlanner arena(kAlign);
    // Arguments are copied in before the schedule runs: their slots live throughout.
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const int v = graph_.inputs[i];
      loc_[v] = {Location::Arena, int64_t(arena.allocate(nbytes(v)))};
    }
    std::vector<std::vector<int>> frees_at(size_t(ns) + 1);
    auto place = [&](int o, int s) {
      if (!materialized[o] || loc_[o].kind == Location::Alias) return;
      if (direct_target[o] >= 0) {
        loc_[o] = {Location::Capture, direct_target[o]};
        return;
      }
      loc_[o] = {Location::Arena, int64_t(arena.allocate(nbytes(o)))};
      const int end = std::max(last_step[o], s);  // unread values die with their step
      if (end < ns) frees_at[end].push_back(o);
    };
    for (int s = 0; s < ns; ++s) {
      if (steps_[s].node >= 0) {
        for (int o : graph_.nodes[steps_[s].node].outputs) place(o, s);
      } else {
        for (const auto& o : groups_[steps_[s].group].outputs) place(o.value, s);
      }
      for (int v : frees_at[s]) arena.release(size_t(loc_[v].index), nbytes(v));
    }
    arena_bytes_ = arena.size();
    const Device dev{DeviceType::CUDA, 0};
    arena_ = Tensor::empty({int64_t(arena_bytes_ + kAlign)}, DType::Bool, dev);
    if (staged_bytes_) staged_ = Tensor::empty({int64_t(staged_bytes_)}, DType::Bool, dev);
    host_staged_.assign(staged_bytes_, 0);
    resolved_root_.resize(size_t(nv));
    resolved_offset_.assign(size_t(nv), 0);
    for (int v = 0; v < nv; ++v) {
      resolved_root_[v] = root(v);
      for (int a = v; loc_[a].kind == Location::Alias; a = int(loc_[a].index)) resolved_offset_[v] += loc_[a].offset;
    }
    // Raises NotImplementedError, before anything runs, for a primitive with no cuda kernel.
    kernels_.assign(steps_.size(), nullptr);
    for (size_t s = 0; s < steps_.size(); ++s)
      if (steps_[s].node >= 0) kernels_[s] = find_kernel(*graph_.nodes[steps_[s].node].prim, DeviceType::CUDA);
    if (!groups_.empty()) {
      // The groups' distinct kernels in a few modules, compiled side by side
      // (and cached on disk).
      Runtime& rt = Runtime::get();
      const GroupKernels kernels = group_kernels(groups_);
      const size_t n = kernels.sources.size(), modules = std::min(n, background_threads() + 1);
      std::vector<std::string> sources(modules);
      for (size_t u = 0; u < n; ++u) sources[u * modules / n] += kernels.sources[u];
      for (size_t m = 1; m < modules; ++m) rt.prepare_kernels(sources[m]);
      std::vector<CUfunction> fns(n);
      for (size_t u = 0; u < n; ++u) fns[u] = rt.kernel(sources[u * modules / n], "fused_" + std::to_string(u));
      for (int u : kernels.kernel_of) group_kernels_.push_back(fns[size_t(u)]);
    }
  }

  char* address(int v) const {
    const Location& l = loc_[resolved_root_[v]];
    char* base = nullptr;
    switch (l.kind) {
      case Location::Arena: base = static_cast<char*>(arena_.raw_data()) + l.index; break;
      case Location::Staged: base = static_cast<char*>(staged_.raw_data()) + l.index; break;
      case Location::Capture: base = static_cast<char*>(graph_.captures[l.index].storage->data()); break;
      case Location::Alias: break;
    }
    return base + resolved_offset_[v];
  }

  // Queues the copies a staged copy_list table lists.
  void copy_table(const CopyTable& t) {
    if (t.positions.empty()) return;
    Runtime& rt = Runtime::get();
    const auto* table = reinterpret_cast<const uint64_t*>(static_cast<char*>(staged_.raw_data()) + t.offset);
    const Launch l = rt.elementwise(int64_t(std::max<size_t>(t.max_bytes / 16, 1)));
    rt.launch(rt.fixed_kernel("elementwise", {"", "copy_list"}), l, CopyListArgs{table, int(t.positions.size())});
  }

  // Writes one copy_list entry into the host side of the staged block.
  void set_copy(const CopyTable& t, size_t k, const void* dst, const void* src, size_t bytes) {
    auto* entry = reinterpret_cast<uint64_t*>(host_staged_.data() + t.offset) + 3 * k;
    entry[0] = reinterpret_cast<uint64_t>(dst);
    entry[1] = reinterpret_cast<uint64_t>(src);
    entry[2] = bytes;
  }

  // Queues the call on the stream (or into a capture): the arguments' copies,
  // the schedule, the writebacks and the results' copies.
  void enqueue() {
    std::vector<ConstArg> in_args;
    std::vector<MutArg> out_args;
    Runtime& rt = Runtime::get();
    copy_table(input_copies_);
    std::vector<uint64_t> words;
    using Clock = std::chrono::steady_clock;
    Clock::time_point t0 = Clock::now();
    for (size_t s = 0; s < steps_.size(); ++s) {
      if (profiling_ && s > 0) {  // each step waited for: its own time, launch included
        rt.synchronize();
        step_seconds_[s - 1] += std::chrono::duration<double>(Clock::now() - t0).count();
        t0 = Clock::now();
      }
      if (steps_[s].group >= 0) {
        const cpu::FusedGroup& grp = groups_[steps_[s].group];
        words.assign(1, uint64_t(grp.numel));
        for (const auto& in : grp.inputs) words.push_back(reinterpret_cast<uint64_t>(address(in.value)));
        if (grp.inputs.empty()) words.push_back(0);
        for (const auto& o : grp.outputs) words.push_back(reinterpret_cast<uint64_t>(address(o.value)));
        rt.launch_raw(group_kernels_[steps_[s].group], rt.elementwise(grp.numel), words.data());
        continue;
      }
      const graph::Node& n = graph_.nodes[steps_[s].node];
      in_args.clear();
      out_args.clear();
      for (int v : n.inputs) in_args.push_back({address(v), &metas_[v]});
      for (int v : n.outputs) out_args.push_back({address(v), &metas_[v]});
      kernels_[s](*n.prim, in_args, out_args);
    }
    if (profiling_ && !steps_.empty()) {
      rt.synchronize();
      step_seconds_.back() += std::chrono::duration<double>(Clock::now() - t0).count();
      ++profiled_runs_;
    }
    for (const auto& w : graph_.writebacks) {
      const TensorMeta& m = graph_.values[w.value].meta;
      rt.device_to_device(graph_.captures[w.capture].storage->data(), address(w.value),
                          size_t(m.numel()) * itemsize(m.dtype));
    }
    copy_table(output_copies_);
  }

  std::vector<void*> capture_addresses() const {
    std::vector<void*> out;
    for (const auto& c : graph_.captures) out.push_back(c.storage->data());
    return out;
  }

  void drop_graph() {
    if (exec_) driver().cuGraphExecDestroy(exec_);
    if (cugraph_) driver().cuGraphDestroy(cugraph_);
    exec_ = nullptr;
    cugraph_ = nullptr;
  }

  // Records the schedule into a CUDA graph; on failure the schedule keeps
  // running as plain launches, with the reason kept for describe().
  void capture() {
    const DriverApi& d = driver();
    CUstream stream = Runtime::get().stream();
    Runtime& rt = Runtime::get();
    check(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL_), "cuStreamBeginCapture");
    rt.set_capturing(true);
    std::string error;
    try {
      enqueue();
    } catch (const std::exception& e) {
      error = e.what();
    }
    rt.set_capturing(false);
    CUgraph g = nullptr;
    const CUresult end = d.cuStreamEndCapture(stream, &g);
    if (error.empty() && end != CUDA_SUCCESS) error = "cuStreamEndCapture failed with CUDA error " + std::to_string(end);
    CUgraphExec exec = nullptr;
    if (error.empty()) {
      const CUresult r = d.cuGraphInstantiate(&exec, g, 0);
      if (r != CUDA_SUCCESS) error = "cuGraphInstantiate failed with CUDA error " + std::to_string(r);
    }
    if (!error.empty()) {
      if (g) d.cuGraphDestroy(g);
      capture_error_ = error;
      return;
    }
    cugraph_ = g;
    exec_ = exec;
    bound_addresses_ = capture_addresses();
    ++captures_made_;
  }

  // The host's share of a call: the feeds, constants and copy tables
  // staged and uploaded; returns the results' tensors the run fills.
  std::vector<Tensor> stage_call(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) {
    profiler::Scope scope("cuda::stage_call");
    Runtime& rt = Runtime::get();
    for (const auto& s : stage_feeds_) std::memcpy(host_staged_.data() + s.offset, feeds[s.index].raw_data(), s.bytes);
    for (const auto& c : host_casts_) {
      const Tensor& f = feeds[c.feed];
      float* dst = reinterpret_cast<float*>(host_staged_.data() + c.offset);
      for (size_t k = 0; k < c.numel; ++k)
        dst[k] = f.dtype() == DType::Float64 ? float(f.data<double>()[k]) : f.data<float>()[k];
    }
    for (const auto& s : stage_captures_)
      std::memcpy(host_staged_.data() + s.offset, graph_.captures[s.index].storage->data(), s.bytes);
    for (size_t k = 0; k < input_copies_.positions.size(); ++k) {
      const size_t i = input_copies_.positions[k];
      set_copy(input_copies_, k, address(graph_.inputs[i]), inputs[i].raw_data(), inputs[i].nbytes());
    }
    for (size_t i = 0; i < inputs.size(); ++i)  // host arguments, copied before the run
      if (inputs[i].device().type != DeviceType::CUDA)
        rt.host_to_device(address(graph_.inputs[i]), inputs[i].raw_data(), inputs[i].nbytes());
    std::vector<Tensor> outs;
    for (int o : graph_.outputs) {
      const TensorMeta& m = graph_.values[o].meta;
      outs.push_back(Tensor::empty(m.shape, m.dtype, m.device));
    }
    for (size_t k = 0; k < output_copies_.positions.size(); ++k) {
      const size_t i = output_copies_.positions[k];
      set_copy(output_copies_, k, outs[i].raw_data(), address(graph_.outputs[i]), outs[i].nbytes());
    }
    if (staged_bytes_) staged_upload_.upload(staged_.raw_data(), host_staged_, rt.stream());
    return outs;
  }

  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, const std::vector<Tensor>& feeds) override {
    Runtime& rt = Runtime::get();
    rt.bind_thread();
    std::lock_guard<std::recursive_mutex> lock(rt.stream_mutex());
    std::vector<Tensor> outs = stage_call(inputs, feeds);
    if (exec_ && capture_addresses() != bound_addresses_) drop_graph();  // a buffer was rebound
    bool ran = false;
    if (!exec_ && !warmed_) {
      enqueue();
      warmed_ = true;
      ran = true;
    }
    if (!exec_ && use_graphs_ && capture_error_.empty() && !profiling_) capture();
    if (!ran) {
      if (exec_ && !profiling_) {
        profiler::Scope launch("cuGraphLaunch");
        check(driver().cuGraphLaunch(exec_, rt.stream()), "cuGraphLaunch");
      } else {
        enqueue();
      }
    }
    for (const auto& w : graph_.writebacks) graph_.captures[w.capture].storage->bump_version();
    for (size_t i = 0; i < outs.size(); ++i)  // host results, read back after the run
      if (outs[i].device().type != DeviceType::CUDA)
        rt.device_to_host(outs[i].raw_data(), address(graph_.outputs[i]), outs[i].nbytes());
    return outs;
  }

  // Profiling runs the schedule as plain launches, synchronising after each.
  void set_profiling(bool on) override {
    profiling_ = on;
    step_seconds_.assign(steps_.size(), 0.0);
    profiled_runs_ = 0;
  }
  uint64_t profiled_runs() const override { return profiled_runs_; }
  std::vector<ProfileEntry> profile() const override {
    std::vector<ProfileEntry> out;
    for (size_t s = 0; s < step_seconds_.size(); ++s) {
      std::ostringstream os;
      if (steps_[s].node >= 0) {
        const graph::Node& n = graph_.nodes[steps_[s].node];
        os << n.prim->name() << " " << shape_str(graph_.values[n.outputs[0]].meta.shape);
        for (size_t i = 0; i < n.inputs.size(); ++i)
          os << (i ? ", " : " <- ") << shape_str(graph_.values[n.inputs[i]].meta.shape);
      } else {
        const cpu::FusedGroup& grp = groups_[steps_[s].group];
        os << "fused x" << grp.numel << " [";  // as the CPU executable's labels
        for (size_t i = 0; i < grp.nodes.size(); ++i) os << (i ? " " : "") << graph_.nodes[grp.nodes[i]].prim->name();
        os << "]";
      }
      out.push_back({os.str(), step_seconds_[s]});
    }
    return out;
  }

  bool profiling_ = false;
  std::vector<double> step_seconds_;
  uint64_t profiled_runs_ = 0;

  struct Staging {
    int index;      // feed or capture index
    size_t offset;  // into the staged block
    size_t bytes;
  };

  struct HostCast {
    int feed;       // feed index
    size_t offset;  // of the float32 result in the staged block
    size_t numel;
  };
  std::vector<HostCast> host_casts_;
  CopyTable input_copies_, output_copies_;
  bool use_graphs_ = true;
  bool warmed_ = false;
  std::string capture_error_;
  int captures_made_ = 0;
  CUgraph cugraph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<void*> bound_addresses_;
  std::vector<TensorMeta> metas_;
  std::vector<Location> loc_;
  struct Step {
    int node = -1;   // >= 0: a single kernel
    int group = -1;  // >= 0: index into groups_
  };
  std::vector<Step> steps_;
  std::vector<Kernel> kernels_;
  std::vector<cpu::FusedGroup> groups_;
  std::vector<CUfunction> group_kernels_;
  std::vector<int> resolved_root_;
  std::vector<size_t> resolved_offset_;
  std::vector<Staging> stage_feeds_, stage_captures_;
  Tensor arena_, staged_;
  std::vector<char> host_staged_;
  StagedUpload staged_upload_;
  size_t arena_bytes_ = 0, staged_bytes_ = 0;
  int direct_writes_ = 0;
};

}  // namespace

std::string fused_module_source(const graph::Graph& g) { return module_source(plan_groups(g)); }

namespace {

std::shared_ptr<graph::Executable> compile_cuda(Graph g, std::vector<graph::RandomKeyFeed> rf) {
  return std::make_shared<CudaExecutable>(std::move(g), std::move(rf));
}

struct Registrar {
  Registrar() { graph::register_compiler(DeviceType::CUDA, compile_cuda); }
} registrar;

}  // namespace

}  // namespace lucid::cuda
