#include "lucid/backend/cpu/fusion.h"

#include <algorithm>
#include <unordered_map>

#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

constexpr int64_t kTile = 1024;
constexpr size_t kMaxRank = 16;  // groups of higher rank are not formed

// The dtypes a register holds exactly (as float32).
bool fusable_dtype(DType t, bool sixteen_bit) {
  return t == DType::Float32 || t == DType::Bool || (sixteen_bit && (t == DType::BFloat16 || t == DType::Float16));
}

}  // namespace

bool fusable_node(const graph::Graph& g, int node, bool sixteen_bit) {
  const graph::Node& n = g.nodes[node];
  const OpKind k = n.prim->kind();
  if (n.outputs.size() != 1 || !fusable_dtype(g.values[n.outputs[0]].meta.dtype, sixteen_bit)) return false;
  if (k == OpKind::Broadcast) return true;
  if (k != OpKind::Unary && k != OpKind::Binary && k != OpKind::Where && k != OpKind::Cast) return false;
  for (int i : n.inputs)
    if (!fusable_dtype(g.values[i].meta.dtype, sixteen_bit)) return false;
  const DType out = g.values[n.outputs[0]].meta.dtype;
  if (k == OpKind::Binary) {
    const BinaryOp op = static_cast<const Binary&>(*n.prim).op;
    // Integer-flavoured float ops stay in their own kernels; arithmetic on
    // bools (true + true) is not 0/1-closed, so only float arithmetic fuses.
    if (op == BinaryOp::FloorDiv || op == BinaryOp::Remainder || op == BinaryOp::Fmod) return false;
    if (!binary_returns_bool(op) && out == DType::Bool) return false;
  }
  if (k == OpKind::Unary && !unary_returns_bool(static_cast<const Unary&>(*n.prim).op) && out == DType::Bool)
    return false;
  return true;
}

namespace {

bool broadcasts_to(const Shape& s, const Shape& shape) {
  if (s.size() > shape.size()) return false;
  const size_t lead = shape.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && s[d] != shape[lead + d]) return false;
  return true;
}

// An operand of shape `s` read by a group of shape `shape` (s broadcasts to it).
void describe_broadcast(const Shape& s, const Shape& shape, FusedInput& in) {
  const size_t nd = shape.size(), lead = nd - s.size();
  std::vector<int64_t> dims, strides;  // outermost first while building
  int64_t stride = 1;
  std::vector<int64_t> in_stride(nd, 0);
  for (size_t d = nd; d-- > lead;) {
    const int64_t extent = s[d - lead];
    in_stride[d] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  for (size_t d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && strides.back() == in_stride[d] * shape[d]) {
      dims.back() *= shape[d];  // merges with the dim outside it
      strides.back() = in_stride[d];
    } else {
      dims.push_back(shape[d]);
      strides.push_back(in_stride[d]);
    }
  }
  in.dims = dims;
  in.strides = strides;
}

}  // namespace

std::vector<FusedGroup> plan_fusion(const graph::Graph& g, const std::vector<int>& last_use, bool sixteen_bit) {
  const int nn = int(g.nodes.size());
  // Groups under construction: members (in node order) and whether they may
  // still grow (no node outside has read one of their values yet).
  struct Building {
    std::vector<int> members;
    bool open = true;
    bool merged = false;
  };
  std::vector<Building> building;
  std::vector<int> group_of_value(g.values.size(), -1);
  auto find = [&](int b) {
    while (building[b].merged) b = building[b].members.front();  // merged groups point at their target
    return b;
  };
  for (int j = 0; j < nn; ++j) {
    const graph::Node& n = g.nodes[j];
    std::vector<int> joins;  // open groups of this shape that j reads
    bool ok = fusable_node(g, j, sixteen_bit);
    const Shape& shape = g.values[n.outputs[0]].meta.shape;
    if (ok) {
      for (int v : n.inputs) {
        const int b = group_of_value[v] >= 0 ? find(group_of_value[v]) : -1;
        const TensorMeta& m = g.values[v].meta;
        if (b >= 0 && building[b].open && m.shape == shape && n.prim->kind() != OpKind::Broadcast) {
          if (std::find(joins.begin(), joins.end(), b) == joins.end()) joins.push_back(b);
        } else {
          ok &= broadcasts_to(m.shape, shape);  // read from memory, broadcast if needed
        }
      }
      ok &= lucid::numel(shape) > 0 && shape.size() <= kMaxRank;
    }
    // Groups read by j from outside must run before j: they stop growing.
    for (int v : n.inputs) {
      const int b = group_of_value[v] >= 0 ? find(group_of_value[v]) : -1;
      if (b >= 0 && !(ok && std::find(joins.begin(), joins.end(), b) != joins.end())) building[b].open = false;
    }
    if (!ok) continue;
    int target;
    if (joins.empty()) {
      target = int(building.size());
      building.push_back({});
    } else {
      target = joins[0];
      for (size_t k = 1; k < joins.size(); ++k) {  // j joins several groups: they become one
        Building& other = building[joins[k]];
        auto& tm = building[target].members;
        tm.insert(tm.end(), other.members.begin(), other.members.end());
        other.members = {target};
        other.merged = true;
      }
      std::sort(building[target].members.begin(), building[target].members.end());
    }
    building[target].members.push_back(j);
    group_of_value[n.outputs[0]] = target;
  }

  std::vector<FusedGroup> groups;
  for (const Building& b : building) {
    if (b.merged || b.members.size() < 2) continue;
    const std::vector<int>& members = b.members;
    const Shape& shape = g.values[g.nodes[members.back()].outputs[0]].meta.shape;
    FusedGroup grp;
    grp.nodes = members;
    grp.numel = lucid::numel(shape);
    std::unordered_map<int, int> reg_of;
    auto reg_for_input = [&](int v) {
      auto it = reg_of.find(v);
      if (it != reg_of.end()) return it->second;
      const int r = grp.num_regs++;
      reg_of[v] = r;
      const TensorMeta& m = g.values[v].meta;
      FusedInput in{v, r, m.numel() == 1, m.dtype, {}, {}};
      if (m.shape != shape && !in.scalar) describe_broadcast(m.shape, shape, in);
      grp.inputs.push_back(std::move(in));
      return r;
    };
    const int last_member = members.back();
    for (int nidx : members) {
      const graph::Node& n = g.nodes[nidx];
      const int out = n.outputs[0];
      const bool is_output = last_use[out] > last_member;
      FusedInstr ins;
      ins.kind = n.prim->kind();
      if (ins.kind == OpKind::Broadcast) {
        // The operand itself, read broadcast; copied only if it must be materialized.
        const int r = reg_for_input(n.inputs[0]);
        if (!is_output) {
          reg_of[out] = r;
          continue;
        }
        ins.kind = OpKind::Cast;  // a plain copy (op 0)
        ins.src[0] = r;
        ins.dtype = g.values[out].meta.dtype;
      } else {
        if (ins.kind == OpKind::Unary) ins.op = uint8_t(static_cast<const Unary&>(*n.prim).op);
        if (ins.kind == OpKind::Binary) ins.op = uint8_t(static_cast<const Binary&>(*n.prim).op);
        if (ins.kind == OpKind::Cast) ins.op = g.values[out].meta.dtype == DType::Bool;
        ins.dtype = g.values[out].meta.dtype;
        for (size_t k = 0; k < n.inputs.size(); ++k) ins.src[k] = reg_for_input(n.inputs[k]);
      }
      ins.dst = grp.num_regs++;
      reg_of[out] = ins.dst;
      grp.code.push_back(ins);
      if (is_output) grp.outputs.push_back({out, ins.dst, g.values[out].meta.dtype});
    }
    groups.push_back(std::move(grp));
  }
  // Schedule order: by last member.
  std::sort(groups.begin(), groups.end(), [](const FusedGroup& a, const FusedGroup& b) {
    return a.nodes.back() < b.nodes.back();
  });
  return groups;
}

namespace {

template <UnaryOp OP>
void run_unary(float* d, const float* a, int64_t n) {
  if constexpr (unary_returns_bool(OP)) {
    for (int64_t i = 0; i < n; ++i) d[i] = unary_predicate<OP>(a[i]) ? 1.f : 0.f;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = unary_apply<OP>(a[i]);
  }
}

template <BinaryOp OP>
void run_binary(float* d, const float* a, const float* b, int64_t n) {
  if constexpr (binary_returns_bool(OP)) {
    for (int64_t i = 0; i < n; ++i) d[i] = binary_predicate<OP>(a[i], b[i]) ? 1.f : 0.f;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = binary_apply<OP>(a[i], b[i]);
  }
}

inline float to_float(float x) { return x; }
inline float to_float(bool x) { return x ? 1.f : 0.f; }
inline float to_float(BFloat16 x) { return bf16_to_float(x.bits); }
inline float to_float(Half x) { return half_to_float(x.bits); }

// Calls fn(const T*) with an operand's pointer as its storage type.
template <class F>
void with_storage(DType t, const void* p, F&& fn) {
  switch (t) {
    case DType::Bool: return fn(static_cast<const bool*>(p));
    case DType::BFloat16: return fn(static_cast<const BFloat16*>(p));
    case DType::Float16: return fn(static_cast<const Half*>(p));
    default: return fn(static_cast<const float*>(p));
  }
}

// Fills r[0, n) with a broadcast operand's elements at group indices
// [t0, t0 + n): runs along the innermost merged dim are filled or copied.
template <class T>
void gather_broadcast(const FusedInput& in, const T* p, int64_t t0, int64_t n, float* r) {
  const size_t nd = in.dims.size();
  int64_t coord[kMaxRank];
  int64_t rest = t0, base = 0;
  for (size_t d = nd; d-- > 0;) {
    coord[d] = rest % in.dims[d];
    rest /= in.dims[d];
    base += coord[d] * in.strides[d];
  }
  const int64_t inner = in.dims[nd - 1], st = in.strides[nd - 1];
  for (int64_t i = 0; i < n;) {
    const int64_t run = std::min(inner - coord[nd - 1], n - i);
    if (st == 0) {
      std::fill(r + i, r + i + run, to_float(p[base]));
    } else {
      for (int64_t k = 0; k < run; ++k) r[i + k] = to_float(p[base + k * st]);
    }
    i += run;
    base += run * st;
    coord[nd - 1] += run;
    for (size_t d = nd - 1; d > 0 && coord[d] == in.dims[d]; --d) {  // carry outwards
      base += in.strides[d - 1] - coord[d] * in.strides[d];
      coord[d] = 0;
      ++coord[d - 1];
    }
  }
}

// Widens n elements of a 16-bit or bool operand into r.
template <class T>
void widen(const T* p, int64_t n, float* r) {
  if constexpr (std::is_same_v<T, Half>) half_to_float(p, r, n);
  else if constexpr (std::is_same_v<T, BFloat16>) bf16_to_float(p, r, n);
  else for (int64_t i = 0; i < n; ++i) r[i] = to_float(p[i]);
}

// Stores n register values into an output of dtype t at p (16-bit values
// are already rounded to t: exact).
void narrow(const float* r, int64_t n, DType t, void* p) {
  switch (t) {
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) static_cast<bool*>(p)[i] = r[i] != 0.f;
      return;
    case DType::BFloat16: return float_to_bf16(r, static_cast<BFloat16*>(p), n);
    case DType::Float16: return float_to_half(r, static_cast<Half*>(p), n);
    default: std::copy(r, r + n, static_cast<float*>(p));
  }
}

// Rounds n register values to dtype t, as an eager kernel storing its
// float32 results into a t tensor does (nothing for float32 and bool).
void round_to(DType t, float* d, int64_t n) {
  if (t == DType::BFloat16) {
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_to_float(float_to_bf16(d[i]));
  } else if (t == DType::Float16) {
    Half tmp[kTile];
    float_to_half(d, tmp, n);
    half_to_float(tmp, d, n);
  }
}

}  // namespace

void run_fused(const FusedGroup& grp, const std::vector<const void*>& in_ptrs, const std::vector<void*>& out_ptrs) {
  // Registers hold float32; bools are 0/1 and compare/select like the eager
  // bool kernels; 16-bit values are rounded to their dtype after each
  // instruction. Casts among these dtypes are exact or one rounding, as in
  // the eager cast. float32 inputs are read in place and float32 outputs
  // written in place: scalars, bools, 16-bit values and intermediates live
  // in tile buffers.
  parallel_for(grp.numel, 16384, [&](int64_t begin, int64_t end) {
    // Registers as long as the chunk needs (a tiny group fills a few floats, not whole tiles).
    const int64_t tile = std::min(kTile, end - begin);
    std::vector<float> regs(size_t(grp.num_regs) * size_t(tile));
    std::vector<float*> ptr(size_t(grp.num_regs));
    for (int r = 0; r < grp.num_regs; ++r) ptr[r] = regs.data() + size_t(r) * tile;
    bool scalars_filled = false;
    for (int64_t t0 = begin; t0 < end; t0 += tile) {
      const int64_t n = std::min(tile, end - t0);
      for (size_t k = 0; k < grp.inputs.size(); ++k) {
        const FusedInput& in = grp.inputs[k];
        float* r = regs.data() + size_t(in.reg) * tile;
        with_storage(in.dtype, in_ptrs[k], [&](const auto* p) {
          using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
          if (in.broadcast()) {
            gather_broadcast(in, p, t0, n, r);
          } else if (in.scalar) {
            if (!scalars_filled) std::fill(r, r + tile, to_float(p[0]));
          } else if constexpr (std::is_same_v<T, float>) {
            ptr[in.reg] = const_cast<float*>(p + t0);
          } else {
            widen(p + t0, n, r);
          }
        });
      }
      scalars_filled = true;
      for (size_t k = 0; k < grp.outputs.size(); ++k)
        if (grp.outputs[k].dtype == DType::Float32) ptr[grp.outputs[k].reg] = static_cast<float*>(out_ptrs[k]) + t0;
      auto R = [&](int r) { return ptr[r]; };
      for (const FusedInstr& ins : grp.code) {
        float* d = R(ins.dst);
        switch (ins.kind) {
          case OpKind::Unary:
            with_op<UnaryOp, int(UnaryOp::Count)>(UnaryOp(ins.op), [&](auto op_c) {
              run_unary<decltype(op_c)::value>(d, R(ins.src[0]), n);
            });
            break;
          case OpKind::Binary:
            with_op<BinaryOp, int(BinaryOp::Count)>(BinaryOp(ins.op), [&](auto op_c) {
              run_binary<decltype(op_c)::value>(d, R(ins.src[0]), R(ins.src[1]), n);
            });
            break;
          case OpKind::Where: {  // selects values already of the result's dtype
            const float *c = R(ins.src[0]), *a = R(ins.src[1]), *b = R(ins.src[2]);
            for (int64_t i = 0; i < n; ++i) d[i] = c[i] != 0.f ? a[i] : b[i];
            break;
          }
          case OpKind::Cast: {
            // to bool is x != 0; to a float dtype a copy, rounded below.
            const float* a = R(ins.src[0]);
            if (ins.op) for (int64_t i = 0; i < n; ++i) d[i] = a[i] != 0.f ? 1.f : 0.f;
            else std::copy(a, a + n, d);
            break;
          }
          default:
            break;
        }
        if (ins.kind != OpKind::Where) round_to(ins.dtype, d, n);
      }
      for (size_t k = 0; k < grp.outputs.size(); ++k) {
        const FusedOutput& out = grp.outputs[k];
        if (out.dtype == DType::Float32) continue;  // written in place above
        narrow(R(out.reg), n, out.dtype, static_cast<char*>(out_ptrs[k]) + t0 * int64_t(itemsize(out.dtype)));
      }
    }
  });
}

}  // namespace lucid::cpu
