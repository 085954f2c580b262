// CPU kernels of the layout primitives: Permute, Broadcast, Slice,
// SliceScatter, Concat. Each is a strided copy.
#include <cstring>

#include "lucid/backend/cpu/layout.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/backend/cpu/strided.h"
#include "lucid/ops/kernels.h"
#include "lucid/ops/primitives.h"

namespace lucid::cpu {

template <class W>
static void copy_runs(char* dst, const Shape& ds, int64_t doff, const char* src, const Shape& ss, int64_t soff,
                      const Shape& shape) {
  const Shape* strides[2] = {&ds, &ss};
  StridedLoop<2> loop(shape, strides);
  const int64_t id = loop.inner_stride(0), is = loop.inner_stride(1);
  W* d = reinterpret_cast<W*>(dst) + doff;
  const W* s = reinterpret_cast<const W*>(src) + soff;
  parallel_for(numel(shape), kElementwiseGrain, [&](int64_t b, int64_t e) {
    loop.run(b, e, [&](int64_t, const int64_t* off, int64_t cnt) {
      W* dp = d + off[0];
      const W* sp = s + off[1];
      if (id == 1 && is == 1) {
        std::memcpy(dp, sp, size_t(cnt) * sizeof(W));
      } else if (id == 1 && is == 0) {
        std::fill(dp, dp + cnt, *sp);
      } else {
        for (int64_t i = 0; i < cnt; ++i) dp[i * id] = sp[i * is];
      }
    });
  });
}

void strided_copy(void* dst, const Shape& dst_strides, int64_t dst_offset, const void* src, const Shape& src_strides,
                  int64_t src_offset, const Shape& shape, size_t esize) {
  if (numel(shape) == 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  switch (esize) {
    case 1: copy_runs<uint8_t>(d, dst_strides, dst_offset, s, src_strides, src_offset, shape); break;
    case 2: copy_runs<uint16_t>(d, dst_strides, dst_offset, s, src_strides, src_offset, shape); break;
    case 4: copy_runs<uint32_t>(d, dst_strides, dst_offset, s, src_strides, src_offset, shape); break;
    case 8: copy_runs<uint64_t>(d, dst_strides, dst_offset, s, src_strides, src_offset, shape); break;
  }
}

// A transposing copy: output dim q is the source's contiguous one, the
// output's last dim is strided in the source. Copying 32x32 tiles keeps the
// source lines of a tile in cache while each is used 32 times, instead of
// touching one line per element.
template <class W>
static void transpose_tiles(const W* src, W* dst, const Shape& out_shape, const Shape& src_strides, int q) {
  const int n = int(out_shape.size());
  const Shape dst_strides = contiguous_strides(out_shape);
  const int64_t rows = out_shape[q], cols = out_shape[n - 1];
  const int64_t src_col = src_strides[n - 1], dst_row = dst_strides[q];
  Shape bshape, bsrc, bdst;  // the other dims, walked as a batch
  for (int d = 0; d < n - 1; ++d)
    if (d != q) {
      bshape.push_back(out_shape[d]);
      bsrc.push_back(src_strides[d]);
      bdst.push_back(dst_strides[d]);
    }
  constexpr int64_t kTile = 32;
  const int64_t rt = (rows + kTile - 1) / kTile, ct = (cols + kTile - 1) / kTile;
  parallel_for(numel(bshape) * rt * ct, std::max<int64_t>(1, kElementwiseGrain / (kTile * kTile)),
               [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r0 = (t / ct) % rt * kTile, c0 = t % ct * kTile;
      int64_t so = 0, dof = 0, rem = t / (rt * ct);
      for (int d = int(bshape.size()) - 1; d >= 0; --d) {
        const int64_t i = rem % bshape[d];
        rem /= bshape[d];
        so += i * bsrc[d];
        dof += i * bdst[d];
      }
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[dof + r * dst_row + c] = src[so + r + c * src_col];
    }
  });
}

void permute_copy(const void* src, void* dst, const Shape& src_shape, const std::vector<int>& perm, size_t esize) {
  const Shape cs = contiguous_strides(src_shape);
  Shape out_shape, src_strides;
  for (int p : perm) {
    out_shape.push_back(src_shape[p]);
    src_strides.push_back(cs[p]);
  }
  const int n = int(out_shape.size());
  int q = -1;  // the output dim that is contiguous in the source
  for (int d = 0; d < n; ++d)
    if (src_strides[d] == 1 && out_shape[d] > 1) q = d;
  if (n >= 2 && q >= 0 && q != n - 1 && out_shape[n - 1] > 1 && numel(out_shape) > 0) {
    switch (esize) {
      case 1: transpose_tiles(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), out_shape, src_strides, q); return;
      case 2: transpose_tiles(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), out_shape, src_strides, q); return;
      case 4: transpose_tiles(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), out_shape, src_strides, q); return;
      case 8: transpose_tiles(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), out_shape, src_strides, q); return;
    }
  }
  strided_copy(dst, contiguous_strides(out_shape), 0, src, src_strides, 0, out_shape, esize);
}

namespace {

size_t esize_of(const MutArg& a) { return itemsize(a.meta->dtype); }

void permute_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  permute_copy(in[0].data, out[0].data, in[0].meta->shape, static_cast<const Permute&>(p).perm, esize_of(out[0]));
}
LUCID_REGISTER_KERNEL(Permute, CPU, permute_kernel);

void broadcast_kernel(const Primitive&, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Shape& os = out[0].meta->shape;
  strided_copy(out[0].data, contiguous_strides(os), 0, in[0].data, broadcast_strides(in[0].meta->shape, os), 0, os,
               esize_of(out[0]));
}
LUCID_REGISTER_KERNEL(Broadcast, CPU, broadcast_kernel);

// Strides and offset that address the slice `spec` of a contiguous tensor.
void slice_geometry(const SliceSpec& spec, const Shape& shape, Shape& strides, int64_t& offset) {
  const Shape cs = contiguous_strides(shape);
  strides.resize(shape.size());
  offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    strides[d] = cs[d] * spec.steps[d];
    offset += spec.starts[d] * cs[d];
  }
}

void slice_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& spec = static_cast<const Slice&>(p).spec;
  Shape ss;
  int64_t off;
  slice_geometry(spec, in[0].meta->shape, ss, off);
  const Shape& os = out[0].meta->shape;
  strided_copy(out[0].data, contiguous_strides(os), 0, in[0].data, ss, off, os, esize_of(out[0]));
}
LUCID_REGISTER_KERNEL(Slice, CPU, slice_kernel);

void slice_scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& spec = static_cast<const SliceScatter&>(p).spec;
  const size_t es = esize_of(out[0]);
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, size_t(out[0].meta->numel()) * es);
  Shape ds;
  int64_t off;
  slice_geometry(spec, out[0].meta->shape, ds, off);
  const Shape& src_shape = in[1].meta->shape;
  strided_copy(out[0].data, ds, off, in[1].data, contiguous_strides(src_shape), 0, src_shape, es);
}
LUCID_REGISTER_KERNEL(SliceScatter, CPU, slice_scatter_kernel);

void concat_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const Concat&>(p).axis;
  const Shape& os = out[0].meta->shape;
  const Shape ocs = contiguous_strides(os);
  int64_t at = 0;
  for (const auto& a : in) {
    const Shape& s = a.meta->shape;
    strided_copy(out[0].data, ocs, at * ocs[axis], a.data, contiguous_strides(s), 0, s, esize_of(out[0]));
    at += s[axis];
  }
}
LUCID_REGISTER_KERNEL(Concat, CPU, concat_kernel);

}  // namespace

}  // namespace lucid::cpu
