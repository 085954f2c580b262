// CPU kernels of the layout primitives: Permute, Broadcast, Slice,
// SliceScatter, Concat. Each is a strided copy.
#include <algorithm>
#include <cstring>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "lucid/backend/cpu/dispatch.h"
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

// ----------------------------------------------------------------- Permute
// A permute is first reduced to its essentials: size-1 dims dropped, and
// output dims merged where they are also neighbours, in order, in the source.
// What is left is either one memcpy, a copy of contiguous runs (the innermost
// dim stays innermost), or a transpose of the source's contiguous dim into
// the output's last dim, done in cache-sized tiles.

// Calls fn(pos, src_off, dst_off) for positions [b, e) of `shape` in
// row-major order, stepping both offsets like an odometer (no division per
// position).
template <class F>
static void walk(const Shape& shape, const Shape& ss, const Shape& ds, int64_t b, int64_t e, F&& fn) {
  const int nd = int(shape.size());
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  int64_t so = 0, dof = 0, rem = b;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    so += idx[d] * ss[d];
    dof += idx[d] * ds[d];
  }
  for (int64_t p = b; p < e; ++p) {
    fn(p, so, dof);
    for (int d = nd - 1; d >= 0; --d) {
      so += ss[d];
      dof += ds[d];
      if (++idx[d] < shape[d]) break;
      so -= shape[d] * ss[d];
      dof -= shape[d] * ds[d];
      idx[d] = 0;
    }
  }
}

// The innermost dim is contiguous on both sides: copy whole runs.
template <class W>
static void permute_runs(const W* src, W* dst, const Shape& shape, const Shape& ss) {
  const int64_t len = shape.back();
  const Shape outer(shape.begin(), shape.end() - 1), os(ss.begin(), ss.end() - 1);
  Shape ds = contiguous_strides(outer);
  for (auto& v : ds) v *= len;
  parallel_for(numel(outer), std::max<int64_t>(1, kElementwiseGrain / len), [&](int64_t b, int64_t e) {
    walk(outer, os, ds, b, e, [&](int64_t, int64_t so, int64_t dof) {
      std::memcpy(dst + dof, src + so, size_t(len) * sizeof(W));
    });
  });
}

// d[r * dr + c] = s[r + c * sc] for r < nr, c < nc: the tile's source lines
// stay in cache while each is used nc times. 8x8 float blocks are
// transposed in registers where AVX is available.
#if defined(__AVX__)
static inline void transpose8x8(const float* s, int64_t sc, float* d, int64_t dr) {
  __m256 a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = _mm256_loadu_ps(s + i * sc);
  for (int i = 0; i < 8; i += 2) {
    b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
    b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    a[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
    a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
    a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
    a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + i * dr, _mm256_permute2f128_ps(a[i], a[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * dr, _mm256_permute2f128_ps(a[i], a[i + 4], 0x31));
  }
}
#endif

template <class W>
static void transpose_tile(const W* s, int64_t sc, W* d, int64_t dr, int64_t nr, int64_t nc) {
  int64_t r0 = 0;
#if defined(__AVX__)
  if constexpr (sizeof(W) == 4) {
    for (; r0 + 8 <= nr; r0 += 8) {
      int64_t c = 0;
      for (; c + 8 <= nc; c += 8)
        transpose8x8(reinterpret_cast<const float*>(s + r0 + c * sc), sc, reinterpret_cast<float*>(d + r0 * dr + c),
                     dr);
      for (int64_t r = r0; r < r0 + 8; ++r)
        for (int64_t cc = c; cc < nc; ++cc) d[r * dr + cc] = s[r + cc * sc];
    }
  }
#endif
  for (int64_t r = r0; r < nr; ++r)
    for (int64_t c = 0; c < nc; ++c) d[r * dr + c] = s[r + c * sc];
}

// Output dim q is the source's contiguous one; the output's last dim is
// strided in the source. The other dims and the tile grid are walked as a
// batch of tiles.
template <class W>
static void permute_transpose(const W* src, W* dst, const Shape& shape, const Shape& ss) {
  const int n = int(shape.size());
  const int q = int(std::find(ss.begin(), ss.end(), 1) - ss.begin());
  const Shape ds = contiguous_strides(shape);
  const int64_t rows = shape[q], cols = shape[n - 1], sc = ss[n - 1], dr = ds[q];
  constexpr int64_t kTile = 32;
  const int64_t rt = (rows + kTile - 1) / kTile, ct = (cols + kTile - 1) / kTile;
  Shape bshape, bss, bds;
  for (int d = 0; d < n - 1; ++d)
    if (d != q) {
      bshape.push_back(shape[d]);
      bss.push_back(ss[d]);
      bds.push_back(ds[d]);
    }
  bshape.insert(bshape.end(), {rt, ct});
  bss.insert(bss.end(), {kTile, kTile * sc});
  bds.insert(bds.end(), {kTile * dr, kTile});
  parallel_for(numel(bshape), std::max<int64_t>(1, kElementwiseGrain / (kTile * kTile)), [&](int64_t b, int64_t e) {
    walk(bshape, bss, bds, b, e, [&](int64_t p, int64_t so, int64_t dof) {
      const int64_t r0 = p / ct % rt * kTile, c0 = p % ct * kTile;
      transpose_tile(src + so, sc, dst + dof, dr, std::min(kTile, rows - r0), std::min(kTile, cols - c0));
    });
  });
}

template <class W>
static void permute_as(const void* src, void* dst, const Shape& shape, const Shape& ss) {
  if (ss.back() == 1) permute_runs(static_cast<const W*>(src), static_cast<W*>(dst), shape, ss);
  else permute_transpose(static_cast<const W*>(src), static_cast<W*>(dst), shape, ss);
}

void permute_copy(const void* src, void* dst, const Shape& src_shape, const std::vector<int>& perm, size_t esize) {
  const int64_t n = numel(src_shape);
  if (n == 0) return;
  const Shape cs = contiguous_strides(src_shape);
  Shape shape, ss;  // output shape and source strides, reduced
  for (int p : perm) {
    if (src_shape[p] == 1) continue;
    if (!ss.empty() && ss.back() == cs[p] * src_shape[p]) {  // follows the previous dim in the source too
      shape.back() *= src_shape[p];
      ss.back() = cs[p];
    } else {
      shape.push_back(src_shape[p]);
      ss.push_back(cs[p]);
    }
  }
  if (shape.size() <= 1) {  // nothing moves
    const char* s = static_cast<const char*>(src);
    char* d = static_cast<char*>(dst);
    parallel_for(n * int64_t(esize), kElementwiseGrain * 8,
                 [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
    return;
  }
  // Short runs (a few bytes) move as one wider element through the transpose:
  // every other source stride is a multiple of the run length.
  const int64_t run_bytes = shape.back() * int64_t(esize);
  if (ss.back() == 1 && (run_bytes == 2 || run_bytes == 4 || run_bytes == 8)) {
    const int64_t len = shape.back();
    shape.pop_back();
    ss.pop_back();
    for (auto& v : ss) v /= len;
    esize = size_t(run_bytes);
  }
  switch (esize) {
    case 1: permute_as<uint8_t>(src, dst, shape, ss); break;
    case 2: permute_as<uint16_t>(src, dst, shape, ss); break;
    case 4: permute_as<uint32_t>(src, dst, shape, ss); break;
    case 8: permute_as<uint64_t>(src, dst, shape, ss); break;
  }
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

// The device's strided copy: makes strided operands contiguous and writes
// into views. A permuted dense source (a transpose, channels-last) read
// into row-major memory is a permute of its memory: contiguous runs and
// cache-sized transpose tiles, not a walk element by element.
void copy_between_layouts(void* dst, const Layout& dl, const void* src, const Layout& sl, DType dt) {
  const size_t esize = itemsize(dt);
  if (is_contiguous(dl.shape, dl.strides) && is_non_overlapping_and_dense(sl.shape, sl.strides)) {
    const std::vector<int64_t> order = memory_order(sl.shape, sl.strides);  // outermost first
    Shape memory_shape;
    std::vector<int> perm(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      memory_shape.push_back(sl.shape[size_t(order[i])]);
      perm[size_t(order[i])] = int(i);
    }
    permute_copy(static_cast<const char*>(src) + sl.offset * int64_t(esize),
                 static_cast<char*>(dst) + dl.offset * int64_t(esize), memory_shape, perm, esize);
    return;
  }
  strided_copy(dst, dl.strides, dl.offset, src, sl.strides, sl.offset, dl.shape, esize);
}
LUCID_REGISTER_STRIDED_COPY(CPU, copy_between_layouts);

// A view primitive materialised (a compiled step whose view is not
// contiguous in its input): its layout over the contiguous input, copied out.
void view_copy_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const Layout src = *p.view_layout(contiguous_layout(in[0].meta->shape));
  const Shape& os = out[0].meta->shape;
  strided_copy(out[0].data, contiguous_strides(os), 0, in[0].data, src.strides, src.offset, os, esize_of(out[0]));
}
LUCID_REGISTER_KERNEL(AsStrided, CPU, view_copy_kernel);
LUCID_REGISTER_KERNEL(StridedView, CPU, view_copy_kernel);

template <class T>
void add_at_layout(T* dst, const Layout& l, const T* src) {
  // Serial: overlapping layouts may reach one element from several places.
  const int64_t n = numel(l.shape);
  const int nd = int(l.shape.size());
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t off = l.offset;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      dst[off] = dst[off] || src[i];
    } else {
      store(dst, off, load(dst, off) + load(src, i));
    }
    for (int d = nd - 1; d >= 0; --d) {
      off += l.strides[d];
      if (++idx[d] < l.shape[d]) break;
      off -= l.strides[d] * l.shape[d];
      idx[d] = 0;
    }
  }
}

void as_strided_scatter_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const auto& sc = static_cast<const AsStridedScatter&>(p);
  const size_t es = esize_of(out[0]);
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, size_t(out[0].meta->numel()) * es);
  const Shape& ss = in[1].meta->shape;
  if (!sc.accumulate) {
    strided_copy(out[0].data, sc.layout.strides, sc.layout.offset, in[1].data, contiguous_strides(ss), 0, ss, es);
    return;
  }
  LUCID_DISPATCH_ALL(out[0].meta->dtype, "as_strided_scatter", [&] {
    add_at_layout(static_cast<T*>(out[0].data), sc.layout, static_cast<const T*>(in[1].data));
  });
}
LUCID_REGISTER_KERNEL(AsStridedScatter, CPU, as_strided_scatter_kernel);

// Each output is one slice of the input along the axis (Concat in reverse).
void split_kernel(const Primitive& p, const std::vector<ConstArg>& in, const std::vector<MutArg>& out) {
  const int axis = static_cast<const Split&>(p).axis;
  const Shape ics = contiguous_strides(in[0].meta->shape);
  int64_t at = 0;
  for (const auto& o : out) {
    const Shape& s = o.meta->shape;
    strided_copy(o.data, contiguous_strides(s), 0, in[0].data, ics, at * ics[size_t(axis)], s, esize_of(o));
    at += s[size_t(axis)];
  }
}
LUCID_REGISTER_KERNEL(Split, CPU, split_kernel);

}  // namespace

}  // namespace lucid::cpu
