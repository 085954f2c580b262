// The CUDA device's kernel table: each primitive's kernel launches one of
// the NVRTC-compiled kernels (sources.h) or cuBLAS on the backend's stream.
// Launches are asynchronous; operands are device memory, except 0-d CPU
// tensors (host scalars an op may combine with device tensors), which are
// copied to the device first. The argument structs mirror the device ones.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "lucid/backend/cuda/cudnn.h"
#include "lucid/backend/cuda/runtime.h"
#include "lucid/backend/cuda/sources.h"
#include "lucid/ops/conv.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/norm.h"
#include "lucid/ops/primitives.h"

namespace lucid::cuda {

namespace {

constexpr int kMaxDims = 10;  // LUCID_MAXD in the prelude

struct Indexer {
  int nd = 0;
  int64_t shape[kMaxDims] = {};
};
template <int N>
struct Strides {
  int64_t s[N][kMaxDims] = {};
};

// Operands as the device kernels see them: 0-d host scalars copied to the
// device (the copies live until the launch is queued; their memory is freed
// in stream order).
class DeviceOperands {
 public:
  explicit DeviceOperands(const std::vector<ConstArg>& in) {
    for (const auto& a : in) {
      if (a.meta->device.type == DeviceType::CUDA) {
        ptrs_.push_back(a.data);
        continue;
      }
      const size_t n = size_t(a.meta->numel()) * itemsize(a.meta->dtype);
      keep_.push_back(Tensor::empty(a.meta->shape, a.meta->dtype, Device{DeviceType::CUDA, 0}));
      Runtime::get().host_to_device(keep_.back().raw_data(), a.data, n);
      ptrs_.push_back(keep_.back().raw_data());
    }
  }
  const void* operator[](size_t i) const { return ptrs_[i]; }

 private:
  std::vector<const void*> ptrs_;
  std::vector<Tensor> keep_;
};

// Merges dims of `shape` that every stride set walks as one (and drops
// size-1 dims); NotImplementedError beyond kMaxDims dims.
template <int N>
void collapse(const Shape& shape, const std::array<Shape, N>& strides, Indexer& ix, Strides<N>& st, const char* op) {
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, N>> sts;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    std::array<int64_t, N> s;
    for (int k = 0; k < N; ++k) s[k] = strides[k][d];
    if (!dims.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge &= sts.back()[k] == s[k] * shape[d];
      if (merge) {
        dims.back() *= shape[d];
        sts.back() = s;
        continue;
      }
    }
    dims.push_back(shape[d]);
    sts.push_back(s);
  }
  if (dims.size() > size_t(kMaxDims))
    fail<NotImplementedError>(op, " on the cuda device: tensors whose layout needs more than ", kMaxDims,
                              " dimensions are not supported");
  ix.nd = int(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    ix.shape[d] = dims[d];
    for (int k = 0; k < N; ++k) st.s[k][d] = sts[d][k];
  }
}

// Strides of `s` broadcast into `out` (0 along broadcast dims).
Shape broadcast_strides_of(const Shape& s, const Shape& out) {
  Shape st(out.size(), 0);
  const Shape cs = contiguous_strides(s);
  const size_t lead = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) st[lead + d] = s[d] == 1 ? 0 : cs[d];
  return st;
}

KernelName name_for(const char* base, DType dt) {
  const char* suffix = type_suffix(int(dt));
  return {suffix, std::string(base) + "_" + suffix};
}
KernelName name_for_width(const char* base, DType dt) {
  const char* suffix = width_suffix(itemsize(dt));
  return {suffix, std::string(base) + "_" + suffix};
}
KernelName untyped(const char* name) { return {"", name}; }

template <class Args>
void run(const char* module, const KernelName& kernel, const Launch& l, const Args& args) {
  Runtime& rt = Runtime::get();
  rt.launch(rt.fixed_kernel(module, kernel), l, args);
}

// ----------------------------------------------------------------- copies
struct StridedCopyArgs {
  void* dst;
  const void* src;
  int64_t n, dst_offset, src_offset;
  Indexer ix;
  Strides<2> s;
};

// Copies elements between two layouts of one shape (`add`: dst += src, for
// layouts that may overlap).
void copy_layouts(void* dst, const Layout& dl, const void* src, const Layout& sl, DType dt, bool add = false) {
  const int64_t n = numel(dl.shape);
  if (n == 0) return;
  if (!add && is_contiguous(dl.shape, dl.strides) && is_contiguous(sl.shape, sl.strides)) {
    const size_t es = itemsize(dt);
    Runtime::get().device_to_device(static_cast<char*>(dst) + dl.offset * int64_t(es),
                                    static_cast<const char*>(src) + sl.offset * int64_t(es), size_t(n) * es);
    return;
  }
  StridedCopyArgs a{dst, src, n, dl.offset, sl.offset, {}, {}};
  collapse<2>(dl.shape, {dl.strides, sl.strides}, a.ix, a.s, "strided copy");
  Runtime& rt = Runtime::get();
  run("elementwise", add ? name_for("add_at_layout", dt) : name_for_width("strided_copy", dt), rt.elementwise(n), a);
}

void strided_copy(void* dst, const Layout& dl, const void* src, const Layout& sl, DType dt) {
  copy_layouts(dst, dl, src, sl, dt);
}
LUCID_REGISTER_STRIDED_COPY(CUDA, strided_copy);

void copy_bytes(void* dst, const void* src, const TensorMeta& m) {
  Runtime::get().device_to_device(dst, src, size_t(m.numel()) * itemsize(m.dtype));
}

// ------------------------------------------------------------ elementwise
struct UnaryArgs {
  const void* x;
  void* out;
  int64_t n;
  int op;
};
void unary_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const UnaryOp op = static_cast<const Unary&>(p).op;
  const DType dt = in[0].meta->dtype;
  if (unary_is_float_only(op) && !is_floating(dt))
    fail<TypeError>(unary_op_name(op), ": not implemented for ", dtype_name(dt));
  const int64_t n = out[0].meta->numel();
  if (!n) return;
  DeviceOperands d(in);
  run("elementwise", name_for("unary", dt), Runtime::get().elementwise(n), UnaryArgs{d[0], out[0].data, n, int(op)});
}
LUCID_REGISTER_KERNEL(Unary, CUDA, unary_kernel);

struct BinaryArgs {
  const void* a;
  const void* b;
  void* out;
  int64_t n;
  int op, mode;
  Indexer ix;
  Strides<2> s;
};
void binary_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const BinaryOp op = static_cast<const Binary&>(p).op;
  const Shape& os = out[0].meta->shape;
  const int64_t n = numel(os);
  if (!n) return;
  DeviceOperands d(in);
  BinaryArgs a{d[0], d[1], out[0].data, n, int(op), 0, {}, {}};
  if (in[0].meta->shape == os && in[1].meta->shape == os) {
    a.mode = 0;
  } else if (in[0].meta->shape == os && in[1].meta->numel() == 1) {
    a.mode = 1;
  } else {
    a.mode = 2;
    collapse<2>(os, {broadcast_strides_of(in[0].meta->shape, os), broadcast_strides_of(in[1].meta->shape, os)}, a.ix,
                a.s, "binary op");
  }
  run("elementwise", name_for("binary", in[0].meta->dtype), Runtime::get().elementwise(n), a);
}
LUCID_REGISTER_KERNEL(Binary, CUDA, binary_kernel);

struct WhereArgs {
  const void* c;
  const void* a;
  const void* b;
  void* out;
  int64_t n;
  Indexer ix;
  Strides<3> s;
};
void where_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Shape& os = out[0].meta->shape;
  const int64_t n = numel(os);
  if (!n) return;
  DeviceOperands d(in);
  WhereArgs a{d[0], d[1], d[2], out[0].data, n, {}, {}};
  collapse<3>(os,
              {broadcast_strides_of(in[0].meta->shape, os), broadcast_strides_of(in[1].meta->shape, os),
               broadcast_strides_of(in[2].meta->shape, os)},
              a.ix, a.s, "where");
  run("elementwise", name_for_width("where", in[1].meta->dtype), Runtime::get().elementwise(n), a);
}
LUCID_REGISTER_KERNEL(Where, CUDA, where_kernel);

struct CastArgs {
  const void* x;
  void* out;
  int64_t n;
};
void cast_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int64_t n = out[0].meta->numel();
  if (!n) return;
  DeviceOperands d(in);
  KernelName name = name_for("cast", in[0].meta->dtype);  // in the source dtype's shard
  name.name = name.name + "_" + type_suffix(int(out[0].meta->dtype));
  run("elementwise", name, Runtime::get().elementwise(n), CastArgs{d[0], out[0].data, n});
}
LUCID_REGISTER_KERNEL(Cast, CUDA, cast_kernel);

void copy_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  DeviceOperands d(in);
  copy_bytes(out[0].data, d[0], *out[0].meta);
}
LUCID_REGISTER_KERNEL(Copy, CUDA, copy_kernel);

// --------------------------------------------------------------- creation
// The bits of `v` stored as dtype `dt` (the CPU's conversion).
uint64_t element_bits(double v, DType dt) {
  uint64_t bits = 0;
  switch (dt) {
    case DType::Bool: { const bool b = v != 0; std::memcpy(&bits, &b, 1); break; }
    case DType::UInt8: { const uint8_t x = uint8_t(int64_t(v)); std::memcpy(&bits, &x, 1); break; }
    case DType::Int8: { const int8_t x = int8_t(int64_t(v)); std::memcpy(&bits, &x, 1); break; }
    case DType::Int16: { const int16_t x = int16_t(int64_t(v)); std::memcpy(&bits, &x, 2); break; }
    case DType::Int32: { const int32_t x = int32_t(v); std::memcpy(&bits, &x, 4); break; }
    case DType::Int64: { const int64_t x = int64_t(v); std::memcpy(&bits, &x, 8); break; }
    case DType::Float16: bits = float_to_half(float(v)); break;
    case DType::BFloat16: bits = float_to_bf16(float(v)); break;
    case DType::Float32: { const float x = float(v); std::memcpy(&bits, &x, 4); break; }
    case DType::Float64: std::memcpy(&bits, &v, 8); break;
  }
  return bits;
}

struct FillArgs {
  void* out;
  int64_t n;
  uint64_t pattern;
};
void fill(void* out, int64_t n, DType dt, uint64_t pattern) {
  if (!n) return;
  run("elementwise", name_for_width("fill", dt), Runtime::get().elementwise(n), FillArgs{out, n, pattern});
}

void full_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const DType dt = out[0].meta->dtype;
  fill(out[0].data, out[0].meta->numel(), dt, element_bits(static_cast<const Full&>(p).value, dt));
}
LUCID_REGISTER_KERNEL(Full, CUDA, full_kernel);

struct ArangeArgs {
  void* out;
  int64_t n;
  double start, step;
};
void arange_kernel(const Primitive& p, const std::vector<ConstArg>&, const std::vector<MutArg>& out) {
  const auto& a = static_cast<const Arange&>(p);
  const int64_t n = out[0].meta->numel();
  if (!n) return;
  run("elementwise", name_for("arange", out[0].meta->dtype), Runtime::get().elementwise(n),
      ArangeArgs{out[0].data, n, a.start, a.step});
}
LUCID_REGISTER_KERNEL(Arange, CUDA, arange_kernel);

struct RandomArgs {
  const void* key;
  void* out;
  int64_t n;
  int normal;
};
void random_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& r = static_cast<const Random&>(p);
  const DType dt = out[0].meta->dtype;
  if (!is_floating(dt)) fail<TypeError>("random: not implemented for ", dtype_name(dt));
  const int64_t n = out[0].meta->numel();
  if (!n) return;
  DeviceOperands d(in);
  run("elementwise", name_for("random", dt), Runtime::get().elementwise(n),
      RandomArgs{d[0], out[0].data, n, r.dist == Distribution::Normal ? 1 : 0});
}
LUCID_REGISTER_KERNEL(Random, CUDA, random_kernel);

// ------------------------------------------------------------- reductions
struct ReduceArgs {
  const void* x;
  void* out;
  int64_t outer, r, inner;
  int op;
};

// [outer, r, inner] of a reduction over `axes` of x; a permuted copy first
// when the reduced axes are not one block.
struct ReducePlan {
  int64_t outer = 1, r = 1, inner = 1;
  const void* data = nullptr;
  Tensor scratch;
};
ReducePlan plan_reduce(const void* data, const TensorMeta& m, const std::vector<int>& axes) {
  ReducePlan plan;
  plan.data = data;
  const Shape& s = m.shape;
  const int nd = int(s.size());
  std::vector<bool> red(size_t(nd), false);
  for (int a : axes) red[size_t(a)] = true;
  int first = -1, last = -1;
  bool block = true;
  for (int d = 0; d < nd; ++d) {
    if (s[d] == 1 || !red[d]) continue;
    if (first < 0) first = d;
    else
      for (int k = last + 1; k < d; ++k)
        if (s[k] != 1) block = false;
    last = d;
  }
  if (first < 0) {
    plan.outer = m.numel();
    return plan;
  }
  if (block) {
    for (int d = 0; d < first; ++d) plan.outer *= s[d];
    for (int d = first; d <= last; ++d) plan.r *= red[d] ? s[d] : 1;
    for (int d = last + 1; d < nd; ++d) plan.inner *= s[d];
    // Columns fold a tile of 32 per block (Reduce), the rows split among its
    // warps; only a very long reduction over a handful of column tiles (a
    // few blocks, each walking a million rows) becomes rows by the permuted
    // copy below, one block per column.
    if (plan.inner == 1 || plan.outer * ((plan.inner + 31) / 32) >= 8 || plan.r <= 65536) return plan;
    plan.outer = plan.r = plan.inner = 1;
  }
  std::vector<int> perm;
  for (int d = 0; d < nd; ++d)
    if (!red[d]) perm.push_back(d);
  for (int d = 0; d < nd; ++d)
    if (red[d]) perm.push_back(d);
  Shape ps, pst;
  const Shape cs = contiguous_strides(s);
  for (int d : perm) {
    ps.push_back(s[d]);
    pst.push_back(cs[d]);
  }
  plan.scratch = Tensor::empty(ps, m.dtype, m.device);
  copy_layouts(plan.scratch.raw_data(), contiguous_layout(ps), data, Layout{ps, pst, 0}, m.dtype);
  plan.data = plan.scratch.raw_data();
  for (int d = 0; d < nd; ++d) (red[d] ? plan.r : plan.outer) *= s[d];
  return plan;
}

Launch reduce_launch(int64_t outer, int64_t r, int64_t inner) {
  Runtime& rt = Runtime::get();
  return inner == 1 ? rt.rows(outer, r) : rt.elementwise(outer * inner);
}

// Reduce's column blocks (source_reduce.cpp): a warp per 16 rows, up to 32.
Launch reduce_column_launch(int64_t outer, int64_t r, int64_t inner) {
  Runtime& rt = Runtime::get();
  Launch l;
  l.threads = unsigned(32 * std::clamp<int64_t>((r + 15) / 16, 1, 32));
  l.blocks = unsigned(std::min<int64_t>(outer * ((inner + 31) / 32), int64_t(rt.sm_count()) * 32));
  return l;
}

void reduce_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& rd = static_cast<const Reduce&>(p);
  const DType dt = in[0].meta->dtype;
  if (out[0].meta->numel() == 0) return;
  DeviceOperands d(in);
  ReducePlan plan = plan_reduce(d[0], *in[0].meta, rd.axes);
  ReduceArgs a{plan.data, out[0].data, plan.outer, plan.r, plan.inner, int(rd.op)};
  const Launch l = plan.inner == 1 ? reduce_launch(plan.outer, plan.r, 1)
                                   : reduce_column_launch(plan.outer, plan.r, plan.inner);
  if (rd.op == ReduceOp::All || rd.op == ReduceOp::Any) {
    run("reduce", untyped(rd.op == ReduceOp::All ? "reduce_all" : "reduce_any"), l, a);
    return;
  }
  if (dt == DType::Bool) fail<TypeError>(rd.name(), ": not implemented for bool");
  run("reduce", name_for("reduce", dt), l, a);
}
LUCID_REGISTER_KERNEL(Reduce, CUDA, reduce_kernel);

struct ArgReduceArgs {
  const void* x;
  void* out;
  int64_t outer, r, inner;
  int is_max;
};
void arg_reduce_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ar = static_cast<const ArgReduce&>(p);
  const Shape& s = in[0].meta->shape;
  int64_t outer = 1, r = 1, inner = 1;
  for (int d = 0; d < int(s.size()); ++d) (d < ar.axis ? outer : (d == ar.axis ? r : inner)) *= s[d];
  if (outer * inner == 0) return;
  DeviceOperands d(in);
  run("reduce", name_for("arg_reduce", in[0].meta->dtype), Runtime::get().elementwise(outer * inner),
      ArgReduceArgs{d[0], out[0].data, outer, r, inner, ar.op == ArgReduceOp::ArgMax ? 1 : 0});
}
LUCID_REGISTER_KERNEL(ArgReduce, CUDA, arg_reduce_kernel);

void check_float(DType dt, const char* op) {
  if (!is_floating(dt)) fail<TypeError>(op, ": not implemented for ", dtype_name(dt));
}

struct SoftmaxArgs {
  const void* x;
  void* y;
  int64_t outer, r, inner;
  int log;
};
void softmax_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sm = static_cast<const Softmax&>(p);
  check_float(in[0].meta->dtype, "softmax");
  const Shape& s = in[0].meta->shape;
  int64_t outer = 1, r = 1, inner = 1;
  for (int d = 0; d < int(s.size()); ++d) (d < sm.axis ? outer : (d == sm.axis ? r : inner)) *= s[d];
  if (outer * r * inner == 0) return;
  DeviceOperands d(in);
  run("reduce", name_for("softmax", in[0].meta->dtype), reduce_launch(outer, r, inner),
      SoftmaxArgs{d[0], out[0].data, outer, r, inner, sm.log ? 1 : 0});
}
LUCID_REGISTER_KERNEL(Softmax, CUDA, softmax_kernel);

struct SoftmaxBackwardArgs {
  const void* g;
  const void* y;
  void* dx;
  int64_t outer, r, inner;
  int log;
};
void softmax_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sb = static_cast<const SoftmaxBackward&>(p);
  check_float(in[1].meta->dtype, "softmax_backward");
  const Shape& s = in[1].meta->shape;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < sb.axis; ++d) outer *= s[d];
  for (size_t d = size_t(sb.axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t r = s.empty() ? 1 : s[sb.axis];
  if (outer * r * inner == 0) return;
  DeviceOperands d(in);
  run("reduce", name_for("softmax_backward", in[1].meta->dtype), reduce_launch(outer, r, inner),
      SoftmaxBackwardArgs{d[0], d[1], out[0].data, outer, r, inner, sb.log ? 1 : 0});
}
LUCID_REGISTER_KERNEL(SoftmaxBackward, CUDA, softmax_backward_kernel);

void rows_of(const TensorMeta& m, int ndims, int64_t& rows, int64_t& d) {
  d = 1;
  for (size_t i = m.shape.size() - size_t(ndims); i < m.shape.size(); ++i) d *= m.shape[i];
  rows = d == 0 ? 0 : m.numel() / d;
}

struct LayerNormArgs {
  const void* x;
  void* xhat;
  void* mean;
  void* rstd;
  int64_t rows, d;
  double eps;
};
void layer_norm_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ln = static_cast<const LayerNorm&>(p);
  check_float(in[0].meta->dtype, "layer_norm");
  int64_t rows, d;
  rows_of(*in[0].meta, ln.ndims, rows, d);
  if (!rows) return;
  DeviceOperands ops(in);
  run("reduce", name_for("layer_norm", in[0].meta->dtype), Runtime::get().rows(rows, d),
      LayerNormArgs{ops[0], out[0].data, out[1].data, out[2].data, rows, d, ln.eps});
}
LUCID_REGISTER_KERNEL(LayerNorm, CUDA, layer_norm_kernel);

struct LayerNormBackwardArgs {
  const void* g;
  const void* x;
  const void* mean;
  const void* rstd;
  void* dx;
  int64_t rows, d;
};
void layer_norm_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& ln = static_cast<const LayerNormBackward&>(p);
  check_float(in[1].meta->dtype, "layer_norm_backward");
  int64_t rows, d;
  rows_of(*in[1].meta, ln.ndims, rows, d);
  if (!rows) return;
  DeviceOperands ops(in);
  run("reduce", name_for("layer_norm_backward", in[1].meta->dtype), Runtime::get().rows(rows, d),
      LayerNormBackwardArgs{ops[0], ops[1], ops[2], ops[3], out[0].data, rows, d});
}
LUCID_REGISTER_KERNEL(LayerNormBackward, CUDA, layer_norm_backward_kernel);

// ----------------------------------------------------------------- matmul
// Row-major C = op(A) op(B) (+ C where `accumulate`) for `op`, for `batch` operand sets
// `stride_*` elements apart, A and B of dtype `dt`, C of `dt` or float32
// (`c_float`, sums of 16-bit operands kept in float32): one cuBLAS call, as
// the column-major C^T = op(B)^T op(A)^T.
void gemm_batched(const char* op, DType dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                  bool accumulate, void* c, int64_t ldc, int64_t stride_c, int64_t batch, bool c_float = false) {
  LUCID_CHECK_T(NotImplementedError, m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && batch <= INT32_MAX &&
                lda <= INT32_MAX && ldb <= INT32_MAX && ldc <= INT32_MAX,
                op, " on the cuda device: dimensions beyond 2^31 are not supported");
  Runtime& rt = Runtime::get();
  int type = CUDA_R_32F, compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (dt == DType::Float64) type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F;
  if (dt == DType::Float16) type = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F;
  if (dt == DType::BFloat16) type = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F;
  const int c_type = c_float ? CUDA_R_32F : type;
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = dt == DType::Float64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = dt == DType::Float64 ? static_cast<const void*>(accumulate ? &one_d : &zero_d)
                                          : (accumulate ? &one_f : &zero_f);
  std::lock_guard<std::recursive_mutex> lock(rt.stream_mutex());
  check_cublas(cublas().cublasGemmStridedBatchedEx(rt.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m), int(k), alpha,
                                                   b, type, int(ldb), stride_b, a, type, int(lda), stride_a, beta, c,
                                                   c_type, int(ldc), stride_c, int(batch), compute,
                                                   CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

struct MatmulArgs {
  const void* a;
  const void* b;
  void* c;
  int64_t batch, m, n, k;
  int trans_a, trans_b;
};
void matmul_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Gemm mm = static_cast<const Matmul&>(p).gemm(in[0].meta->shape, in[1].meta->shape);
  const int64_t batch = mm.batch, m = mm.m, n = mm.n, k = mm.k;
  const DType dt = out[0].meta->dtype;
  if (batch * m * n == 0) return;
  Runtime& rt = Runtime::get();
  DeviceOperands d(in);
  if (k == 0) {
    rt.memset(out[0].data, 0, size_t(out[0].meta->numel()) * itemsize(dt));
    return;
  }
  if (!is_floating(dt)) {
    run("elementwise", name_for("matmul", dt), rt.elementwise(batch * m * n),
        MatmulArgs{d[0], d[1], out[0].data, batch, m, n, k, mm.trans_a, mm.trans_b});
    return;
  }
  gemm_batched("matmul", dt, mm.trans_a, mm.trans_b, m, n, k, d[0], mm.trans_a ? m : k, m * k, d[1],
               mm.trans_b ? k : n, k * n, false, out[0].data, n, m * n, batch);
}
LUCID_REGISTER_KERNEL(Matmul, CUDA, matmul_kernel);

// ----------------------------------------------------------------- layout
// A view primitive materialised: its layout over the row-major input, copied out.
void view_copy_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  DeviceOperands d(in);
  const Layout src = *p.view_layout(contiguous_layout(in[0].meta->shape));
  copy_layouts(out[0].data, contiguous_layout(out[0].meta->shape), d[0], src, out[0].meta->dtype);
}
LUCID_REGISTER_KERNEL(Reshape, CUDA, view_copy_kernel);
LUCID_REGISTER_KERNEL(Permute, CUDA, view_copy_kernel);
LUCID_REGISTER_KERNEL(Broadcast, CUDA, view_copy_kernel);
LUCID_REGISTER_KERNEL(Slice, CUDA, view_copy_kernel);
LUCID_REGISTER_KERNEL(AsStrided, CUDA, view_copy_kernel);
LUCID_REGISTER_KERNEL(StridedView, CUDA, view_copy_kernel);

void slice_scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& spec = static_cast<const SliceScatter&>(p).spec;
  DeviceOperands d(in);
  const TensorMeta& om = *out[0].meta;
  copy_bytes(out[0].data, d[0], om);
  const Shape cs = contiguous_strides(om.shape);
  Layout dl{in[1].meta->shape, Shape(om.shape.size()), 0};
  for (size_t k = 0; k < om.shape.size(); ++k) {
    dl.strides[k] = cs[k] * spec.steps[k];
    dl.offset += spec.starts[k] * cs[k];
  }
  copy_layouts(out[0].data, dl, d[1], contiguous_layout(in[1].meta->shape), om.dtype);
}
LUCID_REGISTER_KERNEL(SliceScatter, CUDA, slice_scatter_kernel);

void concat_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const Concat&>(p).axis;
  DeviceOperands d(in);
  const Shape& os = out[0].meta->shape;
  const Shape ocs = contiguous_strides(os);
  int64_t at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].meta->shape;
    copy_layouts(out[0].data, Layout{s, ocs, at * ocs[size_t(axis)]}, d[i], contiguous_layout(s), out[0].meta->dtype);
    at += s[size_t(axis)];
  }
}
LUCID_REGISTER_KERNEL(Concat, CUDA, concat_kernel);

void as_strided_scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sc = static_cast<const AsStridedScatter&>(p);
  DeviceOperands d(in);
  copy_bytes(out[0].data, d[0], *out[0].meta);
  copy_layouts(out[0].data, sc.layout, d[1], contiguous_layout(in[1].meta->shape), out[0].meta->dtype, sc.accumulate);
}
LUCID_REGISTER_KERNEL(AsStridedScatter, CUDA, as_strided_scatter_kernel);

// --------------------------------------------------------------- indexing
struct GatherArgs {
  const void* x;
  const void* index;
  void* out;
  int* err;
  int64_t n;
  int idx64, axis;
  int64_t size;
  Indexer ix;
  int64_t xs[kMaxDims];
};
void check_rank(size_t nd, const char* op) {
  if (nd > size_t(kMaxDims))
    fail<NotImplementedError>(op, " on the cuda device: more than ", kMaxDims, " dimensions are not supported");
}
void gather_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const Gather&>(p).axis;
  const int64_t n = in[1].meta->numel();
  if (!n) return;
  const Shape& is = in[1].meta->shape;
  check_rank(is.size(), "gather");
  DeviceOperands d(in);
  Runtime& rt = Runtime::get();
  GatherArgs a{d[0], d[1], out[0].data, rt.error_word(), n, in[1].meta->dtype == DType::Int64, axis,
               in[0].meta->shape[size_t(axis)], {}, {}};
  const Shape xs = contiguous_strides(in[0].meta->shape);
  a.ix.nd = int(is.size());
  for (size_t k = 0; k < is.size(); ++k) {
    a.ix.shape[k] = is[k];
    a.xs[k] = xs[k];
  }
  run("index", name_for_width("gather", in[0].meta->dtype), rt.elementwise(n), a);
}
LUCID_REGISTER_KERNEL(Gather, CUDA, gather_kernel);

struct ScatterArgs {
  void* out;
  const void* index;
  const void* src;
  int* err;
  unsigned* winner;
  int64_t n;
  int idx64, axis, accumulate;
  int64_t size;
  Indexer ix;
  int64_t os[kMaxDims];
  int64_t ss[kMaxDims];
};
void scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sc = static_cast<const ScatterAdd&>(p);
  DeviceOperands d(in);
  copy_bytes(out[0].data, d[0], *out[0].meta);
  const int64_t n = in[1].meta->numel();
  if (!n) return;
  const Shape& is = in[1].meta->shape;
  check_rank(is.size(), "scatter");
  Runtime& rt = Runtime::get();
  ScatterArgs a{out[0].data, d[1], d[2], rt.error_word(), nullptr, n, in[1].meta->dtype == DType::Int64, sc.axis,
                sc.accumulate ? 1 : 0, out[0].meta->shape[size_t(sc.axis)], {}, {}, {}};
  const Shape os = contiguous_strides(out[0].meta->shape), ss = contiguous_strides(in[2].meta->shape);
  a.ix.nd = int(is.size());
  for (size_t k = 0; k < is.size(); ++k) {
    a.ix.shape[k] = is[k];
    a.os[k] = os[k];
    a.ss[k] = ss[k];
  }
  // Writes that may collide (several positions along the axis): the last wins, as on the CPU.
  Tensor winner;
  if (!sc.accumulate && is[size_t(sc.axis)] > 1) {
    LUCID_CHECK_T(NotImplementedError, n < int64_t(UINT32_MAX),
                  "scatter on the cuda device: more than 2^32 - 1 index positions are not supported");
    winner = Tensor::empty({out[0].meta->numel()}, DType::Int32, out[0].meta->device);
    rt.memset(winner.raw_data(), 0, winner.nbytes());
    a.winner = static_cast<unsigned*>(winner.raw_data());
    run("index", untyped("scatter_claim"), rt.elementwise(n), a);
  }
  run("index", name_for("scatter", out[0].meta->dtype), rt.elementwise(n), a);
}
LUCID_REGISTER_KERNEL(ScatterAdd, CUDA, scatter_kernel);

void axis_split(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int d = 0; d < int(s.size()); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
}

struct IndexSelectArgs {
  const void* x;
  const void* index;
  void* out;
  int* err;
  int64_t outer, size, n, inner;
  int idx64;
};
void index_select_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const IndexSelect&>(p).axis;
  int64_t outer, inner;
  axis_split(in[0].meta->shape, axis, outer, inner);
  const int64_t n = in[1].meta->numel();
  if (outer * n * inner == 0) return;
  DeviceOperands d(in);
  Runtime& rt = Runtime::get();
  IndexSelectArgs a{d[0], d[1], out[0].data, rt.error_word(), outer, in[0].meta->shape[size_t(axis)], n, inner,
                  in[1].meta->dtype == DType::Int64};
  run("index", name_for_width("index_select", in[0].meta->dtype), rt.elementwise(outer * n * inner), a);
}
LUCID_REGISTER_KERNEL(IndexSelect, CUDA, index_select_kernel);

struct IndexChainArgs {
  const void* index;
  uint64_t* next;
  int32_t* follower;
  int* err;
  int64_t n, size, position_tiles, candidate_tiles;
  int idx64;
};
struct IndexAddArgs {
  void* out;
  const void* index;
  const void* src;
  const int64_t* next;
  const int32_t* follower;
  int64_t outer, size, n, inner;
  int idx64;
};
// Deterministic, in the CPU's order (source_index.cpp): the positions that
// name one row are chained first, then each chain is added by one thread.
void index_add_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  constexpr int64_t kPositionTile = 256, kCandidateTile = 128;  // threads per block; LUCID_CHAIN_TILE
  const int axis = static_cast<const IndexAdd&>(p).axis;
  DeviceOperands d(in);
  copy_bytes(out[0].data, d[0], *out[0].meta);
  int64_t outer, inner;
  axis_split(out[0].meta->shape, axis, outer, inner);
  const int64_t n = in[1].meta->numel(), size = out[0].meta->shape[size_t(axis)];
  if (outer * n * inner == 0) return;
  Runtime& rt = Runtime::get();
  const int idx64 = in[1].meta->dtype == DType::Int64;
  const Device dev = out[0].meta->device;
  Tensor next = Tensor::empty({n}, DType::Int64, dev), follower = Tensor::empty({n}, DType::Int32, dev);
  auto* next_data = static_cast<uint64_t*>(next.raw_data());
  auto* follower_data = static_cast<int32_t*>(follower.raw_data());
  rt.memset(next_data, 0xFF, size_t(n) * sizeof(uint64_t));
  rt.memset(follower_data, 0, size_t(n) * sizeof(int32_t));
  const int64_t position_tiles = (n + kPositionTile - 1) / kPositionTile;
  const int64_t candidate_tiles = (n + kCandidateTile - 1) / kCandidateTile;
  Launch chain;
  chain.threads = unsigned(kPositionTile);
  chain.blocks = unsigned(std::min<int64_t>(position_tiles * candidate_tiles, int64_t(rt.sm_count()) * 64));
  run("index", untyped("index_chain"), chain,
      IndexChainArgs{d[1], next_data, follower_data, rt.error_word(), n, size, position_tiles, candidate_tiles, idx64});
  run("index", name_for("index_add", out[0].meta->dtype), rt.elementwise(outer * n * inner),
      IndexAddArgs{out[0].data, d[1], d[2], reinterpret_cast<const int64_t*>(next_data), follower_data, outer, size, n,
                   inner, idx64});
}
LUCID_REGISTER_KERNEL(IndexAdd, CUDA, index_add_kernel);

// ---------------------------------------------------------- sliding windows
struct Window {
  int64_t kh, kw, sh, sw, dh, dw, pad_top, pad_left;
};
Window window_of(const Window2d& w) { return {w.kh, w.kw, w.sh, w.sw, w.dh, w.dw, w.pad_top, w.pad_left}; }

// Im2Col's padding value as dtype `dt` (integers clamp; -inf pads an
// integer max-pool with the lowest value).
uint64_t pad_bits(double v, DType dt) {
  if (dt == DType::Int32 || dt == DType::Int64) {
    const double lo = dt == DType::Int32 ? double(std::numeric_limits<int32_t>::lowest()) : -9.2233720368547758e18;
    const double hi = dt == DType::Int32 ? double(std::numeric_limits<int32_t>::max()) : 9.2233720368547758e18;
    if (std::isnan(v)) v = 0;
    if (v <= lo) return dt == DType::Int32 ? element_bits(lo, dt) : uint64_t(std::numeric_limits<int64_t>::lowest());
    if (v >= hi) return dt == DType::Int32 ? element_bits(hi, dt) : uint64_t(std::numeric_limits<int64_t>::max());
  }
  if (dt == DType::Bool) return v > 0 ? 1 : 0;
  return element_bits(v, dt);
}

struct Im2ColArgs {
  const void* x;
  void* cols;
  int64_t n, c, h, w, oh, ow;
  Window win;
  uint64_t pad;
};
void im2col_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Im2Col&>(p);
  const Shape& s = in[0].meta->shape;
  const int64_t total = out[0].meta->numel();
  if (!total) return;
  DeviceOperands d(in);
  const DType dt = in[0].meta->dtype;
  run("index", name_for_width("im2col", dt), Runtime::get().elementwise(total),
      Im2ColArgs{d[0], out[0].data, s[0], s[1], s[2], s[3], prim.win.out_h(s[2]), prim.win.out_w(s[3]),
                 window_of(prim.win), pad_bits(prim.pad_value, dt)});
}
LUCID_REGISTER_KERNEL(Im2Col, CUDA, im2col_kernel);

struct Col2ImArgs {
  const void* cols;
  void* x;
  int64_t n, c, h, w, oh, ow;
  Window win;
};
void col2im_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Col2Im&>(p);
  const Shape& s = out[0].meta->shape;
  const int64_t total = out[0].meta->numel();
  if (!total) return;
  const DType dt = out[0].meta->dtype;
  if (dt == DType::Bool) fail<TypeError>("col2im: not implemented for bool");
  DeviceOperands d(in);
  run("index", name_for("col2im", dt), Runtime::get().elementwise(total),
      Col2ImArgs{d[0], out[0].data, s[0], s[1], s[2], s[3], prim.win.out_h(s[2]), prim.win.out_w(s[3]),
                 window_of(prim.win)});
}
LUCID_REGISTER_KERNEL(Col2Im, CUDA, col2im_kernel);

struct MaxPoolArgs {
  const void* x;
  void* out;
  void* idx;
  int64_t planes, h, w, oh, ow;
  Window win;
};
void max_pool2d_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const MaxPool2d&>(p);
  const Shape& s = in[0].meta->shape;
  const int64_t total = out[0].meta->numel();
  if (!total) return;
  const DType dt = in[0].meta->dtype;
  if (dt == DType::Bool) fail<TypeError>("max_pool2d: not implemented for bool");
  DeviceOperands d(in);
  run("index", name_for("max_pool", dt), Runtime::get().elementwise(total),
      MaxPoolArgs{d[0], out[0].data, out[1].data, s[0] * s[1], s[2], s[3], prim.win.out_h(s[2]),
                  prim.win.out_w(s[3]), window_of(prim.win)});
}
LUCID_REGISTER_KERNEL(MaxPool2d, CUDA, max_pool2d_kernel);

struct MaxPoolBackwardArgs {
  const void* g;
  const void* idx;
  void* dx;
  int64_t planes, h, w, oh, ow;
  Window win;
};
void max_pool2d_backward_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const MaxPool2dBackward&>(p);
  const Shape& s = out[0].meta->shape;
  const int64_t total = out[0].meta->numel();
  if (!total) return;
  check_float(out[0].meta->dtype, "max_pool2d_backward");
  DeviceOperands d(in);
  const Shape& gs = in[0].meta->shape;
  run("index", name_for("max_pool_backward", out[0].meta->dtype), Runtime::get().elementwise(total),
      MaxPoolBackwardArgs{d[0], d[1], out[0].data, s[0] * s[1], s[2], s[3], gs[2], gs[3], window_of(prim.win)});
}
LUCID_REGISTER_KERNEL(MaxPool2dBackward, CUDA, max_pool2d_backward_kernel);

// ------------------------------------------------------------ convolution
// The convolution primitives (ops/conv.h) with the im2col/col2im kernels
// and cuBLAS, a block of images at a time (the block's unfolded input capped
// in size): per block, one GEMM batched over the groups between the unfolded
// input [C*kh*kw, images, OH*OW] and the output gradient permuted to
// [O, images, OH*OW], whose rows are the groups' channels.
struct ConvDims {
  int64_t n, c, h, w, o, oh, ow, groups, kk, kg, l;  // kg: rows of a group's unfolded input
  ConvDims(const Window2d& win, int64_t groups, const Shape& x, const Shape& y)
      : n(x[0]), c(x[1]), h(x[2]), w(x[3]), o(y[1]), oh(y[2]), ow(y[3]), groups(groups) {
    kk = win.kh * win.kw;
    kg = c / groups * kk;
    l = oh * ow;
  }
  int64_t og() const { return o / groups; }
  // Images per block: the unfolded input of a block within 256 MiB.
  int64_t block(DType dt) const {
    const int64_t per_image = std::max<int64_t>(1, c * kk * l * int64_t(itemsize(dt)));
    return std::clamp<int64_t>((int64_t(256) << 20) / per_image, 1, std::max<int64_t>(n, 1));
  }
};

Tensor device_scratch(int64_t n, DType dt, const Device& dev) { return Tensor::empty({n}, dt, dev); }

// The convolution as cuDNN describes it; cuDNN pads both sides alike, so a
// window padded unevenly ('same' with an even kernel) has no description
// and takes the unfolding path.
std::optional<cudnn::ConvShape> cudnn_shape(const Window2d& win, const ConvDims& d) {
  if (win.pad_top != win.pad_bottom || win.pad_left != win.pad_right) return std::nullopt;
  return cudnn::ConvShape{d.n,      d.c,    d.h,    d.w,    d.o,      win.kh,   win.kw, win.pad_top,
                          win.pad_left, win.sh, win.sw, win.dh, win.dw, d.groups, d.oh,   d.ow};
}

// Runs one convolution direction by cuDNN (`by_cudnn`, false when cuDNN
// cannot) or by im2col + cuBLAS (`unfolded`), whichever ran faster on this
// shape: both are timed once, warm, at the shape's first use outside a graph
// capture, and the choice is kept (cuDNN's own choice inside a capture until
// then). Neither always wins: in strict float32 cuDNN has one deterministic
// weight-gradient algorithm that is not a transform, many times slower
// than a GEMM on small images, and cuDNN wins on large ones. The output is
// always the kept path's, so later calls match the first bit for bit.
enum class ConvDirection { Forward, BackwardData, BackwardFilter };
template <class ByCudnn, class Unfolded>
void convolve(ConvDirection dir, const std::optional<cudnn::ConvShape>& shape, DType dt, ByCudnn&& by_cudnn,
              Unfolded&& unfolded) {
  if (!shape) return unfolded();
  Runtime& rt = Runtime::get();
  static std::mutex mu;
  static std::map<std::array<int64_t, 19>, bool> use_cudnn;  // by direction, shape, dtype and TF32 setting
  const cudnn::ConvShape& c = *shape;
  const std::array<int64_t, 19> key{int64_t(dir), c.n, c.c, c.h, c.w, c.o, c.kh, c.kw, c.pad_h, c.pad_w, c.stride_h,
                                    c.stride_w, c.dil_h, c.dil_w, c.groups, c.oh, c.ow, int64_t(dt),
                                    int64_t(allow_tf32())};
  std::unique_lock<std::mutex> lock(mu);
  if (auto it = use_cudnn.find(key); it != use_cudnn.end()) {
    const bool by = it->second;
    lock.unlock();
    if (!by || !by_cudnn()) unfolded();
    return;
  }
  lock.unlock();
  if (rt.capturing()) {
    if (!by_cudnn()) unfolded();
    return;
  }
  if (!by_cudnn()) {  // cuDNN cannot: nothing to time
    unfolded();
    return;
  }
  const double cudnn_ms = rt.time_ms([&] { by_cudnn(); });
  unfolded();  // warm (its scratch, its kernels loaded)
  const double unfolded_ms = rt.time_ms(unfolded);
  const bool by = cudnn_ms <= unfolded_ms;
  if (by) by_cudnn();
  lock.lock();
  use_cudnn.emplace(key, by);
}

// [images, O, L] <-> [O, images, L] (`to_channel_major`: the first into the second).
void swap_image_channel(void* dst, const void* src, int64_t images, int64_t o, int64_t l, DType dt,
                        bool to_channel_major) {
  const Layout image_major{{images, o, l}, {o * l, l, 1}, 0};
  const Layout channel_major_as_image{{images, o, l}, {l, images * l, 1}, 0};
  if (to_channel_major)
    copy_layouts(dst, channel_major_as_image, src, image_major, dt);
  else
    copy_layouts(dst, image_major, src, channel_major_as_image, dt);
}

void unfold_images(const void* x, void* cols, const ConvDims& d, const Window2d& win, int64_t images, DType dt) {
  run("index", name_for_width("im2col", dt), Runtime::get().elementwise(d.c * d.kk * images * d.l),
      Im2ColArgs{x, cols, images, d.c, d.h, d.w, d.oh, d.ow, window_of(win), 0});
}

void conv2d_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Conv2d&>(p);
  const TensorMeta& ym = *out[0].meta;
  if (!ym.numel()) return;
  const DType dt = ym.dtype;
  check_float(dt, "conv2d");
  DeviceOperands ops(in);
  const ConvDims d(prim.win, prim.groups, in[0].meta->shape, ym.shape);
  const auto shape = cudnn_shape(prim.win, d);
  auto unfolded = [&] {
    if (d.kg == 0) {
      Runtime::get().memset(out[0].data, 0, size_t(ym.numel()) * itemsize(dt));
      return;
    }
    const int64_t nb = d.block(dt), og = d.og(), es = int64_t(itemsize(dt));
    Tensor cols = device_scratch(d.c * d.kk * nb * d.l, dt, ym.device);
    Tensor prod = device_scratch(d.o * nb * d.l, dt, ym.device);
    for (int64_t n0 = 0; n0 < d.n; n0 += nb) {
      const int64_t images = std::min(nb, d.n - n0), span = images * d.l;
      unfold_images(static_cast<const char*>(ops[0]) + n0 * d.c * d.h * d.w * es, cols.raw_data(), d, prim.win,
                    images, dt);
      gemm_batched("conv2d", dt, false, false, og, span, d.kg, ops[1], d.kg, og * d.kg, cols.raw_data(), span,
                   d.kg * span, false, prod.raw_data(), span, og * span, d.groups);
      swap_image_channel(static_cast<char*>(out[0].data) + n0 * d.o * d.l * es, prod.raw_data(), images, d.o, d.l,
                         dt, false);
    }
  };
  convolve(ConvDirection::Forward, shape, dt,
           [&] { return cudnn::conv2d_forward(*shape, dt, ops[0], ops[1], out[0].data); }, unfolded);
}
LUCID_REGISTER_KERNEL(Conv2d, CUDA, conv2d_kernel);

void conv2d_backward_input_kernel(const Primitive& p, const std::vector<ConstArg>& in,
                                  const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Conv2dBackwardInput&>(p);
  const TensorMeta& xm = *out[0].meta;
  if (!xm.numel()) return;
  const DType dt = xm.dtype;
  check_float(dt, "conv2d_backward_input");
  DeviceOperands ops(in);
  const ConvDims d(prim.win, prim.groups, xm.shape, in[0].meta->shape);
  const auto shape = cudnn_shape(prim.win, d);
  auto unfolded = [&] {
    Runtime& rt = Runtime::get();
    if (d.o == 0) {
      rt.memset(out[0].data, 0, size_t(xm.numel()) * itemsize(dt));
      return;
    }
    const int64_t nb = d.block(dt), og = d.og(), es = int64_t(itemsize(dt));
    Tensor cols = device_scratch(d.c * d.kk * nb * d.l, dt, xm.device);
    Tensor grad = device_scratch(d.o * nb * d.l, dt, xm.device);
    for (int64_t n0 = 0; n0 < d.n; n0 += nb) {
      const int64_t images = std::min(nb, d.n - n0), span = images * d.l;
      swap_image_channel(grad.raw_data(), static_cast<const char*>(ops[0]) + n0 * d.o * d.l * es, images, d.o, d.l,
                         dt, true);
      gemm_batched("conv2d_backward_input", dt, true, false, d.kg, span, og, ops[1], d.kg, og * d.kg,
                   grad.raw_data(), span, og * span, false, cols.raw_data(), span, d.kg * span, d.groups);
      run("index", name_for("col2im", dt), rt.elementwise(images * d.c * d.h * d.w),
          Col2ImArgs{cols.raw_data(), static_cast<char*>(out[0].data) + n0 * d.c * d.h * d.w * es, images, d.c,
                     d.h, d.w, d.oh, d.ow, window_of(prim.win)});
    }
  };
  convolve(ConvDirection::BackwardData, shape, dt,
           [&] { return cudnn::conv2d_backward_data(*shape, dt, ops[0], ops[1], out[0].data); }, unfolded);
}
LUCID_REGISTER_KERNEL(Conv2dBackwardInput, CUDA, conv2d_backward_input_kernel);

void conv2d_backward_weight_kernel(const Primitive& p, const std::vector<ConstArg>& in,
                                   const std::vector<MutArg>& out) {
  const auto& prim = static_cast<const Conv2dBackwardWeight&>(p);
  const TensorMeta& wm = *out[0].meta;
  if (!wm.numel()) return;
  const DType dt = wm.dtype;
  check_float(dt, "conv2d_backward_weight");
  DeviceOperands ops(in);
  const ConvDims d(prim.win, prim.groups, in[0].meta->shape, in[1].meta->shape);
  const auto shape = cudnn_shape(prim.win, d);
  auto unfolded = [&] {
    Runtime& rt = Runtime::get();
    if (d.n == 0) {
      rt.memset(out[0].data, 0, size_t(wm.numel()) * itemsize(dt));
      return;
    }
    const int64_t nb = d.block(dt), og = d.og(), es = int64_t(itemsize(dt));
    // Blocks add into one sum: float32 for 16-bit types, rounded once at the end.
    const bool narrow = dt == DType::Float16 || dt == DType::BFloat16;
    Tensor sum = narrow ? device_scratch(wm.numel(), DType::Float32, wm.device) : Tensor();
    void* acc = narrow ? sum.raw_data() : out[0].data;
    Tensor cols = device_scratch(d.c * d.kk * nb * d.l, dt, wm.device);
    Tensor grad = device_scratch(d.o * nb * d.l, dt, wm.device);
    for (int64_t n0 = 0; n0 < d.n; n0 += nb) {
      const int64_t images = std::min(nb, d.n - n0), span = images * d.l;
      unfold_images(static_cast<const char*>(ops[0]) + n0 * d.c * d.h * d.w * es, cols.raw_data(), d, prim.win,
                    images, dt);
      swap_image_channel(grad.raw_data(), static_cast<const char*>(ops[1]) + n0 * d.o * d.l * es, images, d.o, d.l,
                         dt, true);
      gemm_batched("conv2d_backward_weight", dt, false, true, og, d.kg, span, grad.raw_data(), span, og * span,
                   cols.raw_data(), span, d.kg * span, n0 > 0, acc, d.kg, og * d.kg, d.groups, narrow);
    }
    if (narrow) {
      KernelName name = name_for("cast", DType::Float32);
      name.name = name.name + "_" + type_suffix(int(dt));
      run("elementwise", name, rt.elementwise(wm.numel()), CastArgs{acc, out[0].data, wm.numel()});
    }
  };
  convolve(ConvDirection::BackwardFilter, shape, dt,
           [&] { return cudnn::conv2d_backward_filter(*shape, dt, ops[0], ops[1], out[0].data); }, unfolded);
}
LUCID_REGISTER_KERNEL(Conv2dBackwardWeight, CUDA, conv2d_backward_weight_kernel);

}  // namespace

}  // namespace lucid::cuda
