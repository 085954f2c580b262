#include "lucid/backend/cpu/fusion.h"

#include <algorithm>
#include <unordered_map>

#include "lucid/backend/cpu/math.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

namespace {

constexpr int64_t kTile = 1024;

bool f32_or_bool(DType t) { return t == DType::Float32 || t == DType::Bool; }

}  // namespace

bool fusable_node(const graph::Graph& g, int node) {
  const graph::Node& n = g.nodes[node];
  const OpKind k = n.prim->kind();
  if (k != OpKind::Unary && k != OpKind::Binary && k != OpKind::Where && k != OpKind::Cast) return false;
  if (n.outputs.size() != 1 || !f32_or_bool(g.values[n.outputs[0]].meta.dtype)) return false;
  for (int i : n.inputs)
    if (!f32_or_bool(g.values[i].meta.dtype)) return false;
  const DType out = g.values[n.outputs[0]].meta.dtype;
  if (k == OpKind::Binary) {
    const BinaryOp op = static_cast<const Binary&>(*n.prim).op;
    // Integer-flavoured float ops stay in their own kernels; arithmetic on
    // bools (true + true) is not 0/1-closed, so only float32 arithmetic fuses.
    if (op == BinaryOp::FloorDiv || op == BinaryOp::Remainder) return false;
    if (!binary_returns_bool(op) && out != DType::Float32) return false;
  }
  if (k == OpKind::Unary && !unary_returns_bool(static_cast<const Unary&>(*n.prim).op) && out != DType::Float32)
    return false;
  return true;
}

std::vector<FusedGroup> plan_fusion(const graph::Graph& g, const std::vector<int>& last_use) {
  // last_use[v]: index of the last node reading v (>= nodes.size() for
  // outputs and writebacks).
  std::vector<FusedGroup> groups;
  const int nn = int(g.nodes.size());
  int i = 0;
  while (i < nn) {
    if (!fusable_node(g, i)) {
      ++i;
      continue;
    }
    const Shape& shape = g.values[g.nodes[i].outputs[0]].meta.shape;
    const int64_t numel = lucid::numel(shape);
    std::vector<int> members;
    std::unordered_map<int, bool> inside;  // values produced in the group
    int j = i;
    for (; j < nn && fusable_node(g, j); ++j) {
      const graph::Node& n = g.nodes[j];
      if (g.values[n.outputs[0]].meta.shape != shape) break;
      bool ok = true;
      for (int v : n.inputs) {
        const TensorMeta& m = g.values[v].meta;
        ok &= inside.count(v) || m.shape == shape || m.numel() == 1;
      }
      if (!ok) break;
      members.push_back(j);
      inside[n.outputs[0]] = true;
    }
    if (members.size() < 2 || numel == 0) {
      i = std::max(i + 1, j);
      continue;
    }
    FusedGroup grp;
    grp.nodes = members;
    grp.numel = numel;
    std::unordered_map<int, int> reg_of;
    auto reg_for_input = [&](int v) {
      auto it = reg_of.find(v);
      if (it != reg_of.end()) return it->second;
      const int r = grp.num_regs++;
      reg_of[v] = r;
      const TensorMeta& m = g.values[v].meta;
      grp.inputs.push_back({v, r, m.shape != shape, m.dtype == DType::Bool});
      return r;
    };
    const int last_member = members.back();
    for (int nidx : members) {
      const graph::Node& n = g.nodes[nidx];
      FusedInstr ins;
      ins.kind = n.prim->kind();
      if (ins.kind == OpKind::Unary) ins.op = uint8_t(static_cast<const Unary&>(*n.prim).op);
      if (ins.kind == OpKind::Binary) ins.op = uint8_t(static_cast<const Binary&>(*n.prim).op);
      if (ins.kind == OpKind::Cast) ins.op = g.values[n.outputs[0]].meta.dtype == DType::Bool;
      for (size_t k = 0; k < n.inputs.size(); ++k) ins.src[k] = reg_for_input(n.inputs[k]);
      const int out = n.outputs[0];
      ins.dst = grp.num_regs++;
      reg_of[out] = ins.dst;
      grp.code.push_back(ins);
      if (last_use[out] > last_member)
        grp.outputs.push_back({out, ins.dst, g.values[out].meta.dtype == DType::Bool});
    }
    groups.push_back(std::move(grp));
    i = j;
  }
  return groups;
}

namespace {

template <UnaryOp OP>
void run_unary(float* d, const float* a, int64_t n) {
  if constexpr (OP >= UnaryOp::LogicalNot) {
    for (int64_t i = 0; i < n; ++i) d[i] = unary_predicate<OP>(a[i]) ? 1.f : 0.f;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = unary_apply<OP>(a[i]);
  }
}

template <BinaryOp OP>
void run_binary(float* d, const float* a, const float* b, int64_t n) {
  if constexpr (OP >= BinaryOp::Eq) {
    for (int64_t i = 0; i < n; ++i) d[i] = binary_predicate<OP>(a[i], b[i]) ? 1.f : 0.f;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = binary_apply<OP>(a[i], b[i]);
  }
}

}  // namespace

void run_fused(const FusedGroup& grp, const std::vector<const void*>& in_ptrs, const std::vector<void*>& out_ptrs) {
  // Registers hold float32; bools are 0/1 and compare/select like the eager
  // bool kernels. Casts between float32 and bool are exact in this form.
  // float32 inputs are read in place and float32 outputs written in place:
  // only scalars, bools and intermediates live in tile buffers.
  parallel_for(grp.numel, 16384, [&](int64_t begin, int64_t end) {
    std::vector<float> regs(size_t(grp.num_regs) * kTile);
    std::vector<float*> ptr(size_t(grp.num_regs));
    for (int r = 0; r < grp.num_regs; ++r) ptr[r] = regs.data() + size_t(r) * kTile;
    bool scalars_filled = false;
    for (int64_t t0 = begin; t0 < end; t0 += kTile) {
      const int64_t n = std::min(kTile, end - t0);
      for (size_t k = 0; k < grp.inputs.size(); ++k) {
        const FusedInput& in = grp.inputs[k];
        float* r = regs.data() + size_t(in.reg) * kTile;
        if (in.is_bool) {
          const bool* p = static_cast<const bool*>(in_ptrs[k]);
          if (in.scalar) {
            if (!scalars_filled) std::fill(r, r + kTile, p[0] ? 1.f : 0.f);
          } else {
            for (int64_t i = 0; i < n; ++i) r[i] = p[t0 + i] ? 1.f : 0.f;
          }
        } else {
          const float* p = static_cast<const float*>(in_ptrs[k]);
          if (in.scalar) {
            if (!scalars_filled) std::fill(r, r + kTile, p[0]);
          } else {
            ptr[in.reg] = const_cast<float*>(p + t0);
          }
        }
      }
      scalars_filled = true;
      for (size_t k = 0; k < grp.outputs.size(); ++k)
        if (!grp.outputs[k].is_bool) ptr[grp.outputs[k].reg] = static_cast<float*>(out_ptrs[k]) + t0;
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
          case OpKind::Where: {
            const float *c = R(ins.src[0]), *a = R(ins.src[1]), *b = R(ins.src[2]);
            for (int64_t i = 0; i < n; ++i) d[i] = c[i] != 0.f ? a[i] : b[i];
            break;
          }
          case OpKind::Cast: {
            // float32 <-> bool (the only casts fused): to bool is x != 0.
            const float* a = R(ins.src[0]);
            if (ins.op) for (int64_t i = 0; i < n; ++i) d[i] = a[i] != 0.f ? 1.f : 0.f;
            else std::copy(a, a + n, d);
            break;
          }
          default:
            break;
        }
      }
      for (size_t k = 0; k < grp.outputs.size(); ++k) {
        const FusedOutput& out = grp.outputs[k];
        if (!out.is_bool) continue;  // written in place above
        const float* r = R(out.reg);
        bool* p = static_cast<bool*>(out_ptrs[k]);
        for (int64_t i = 0; i < n; ++i) p[t0 + i] = r[i] != 0.f;
      }
    }
  });
}

}  // namespace lucid::cpu
