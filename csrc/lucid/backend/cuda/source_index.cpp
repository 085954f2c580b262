// Indexing kernels (Gather, ScatterAdd, IndexSelect, IndexAdd) and the
// sliding-window kernels (Im2Col, Col2Im, MaxPool2d and its backward).
// An out-of-range index is reported through the error word (raised on the
// host as IndexError at the next synchronisation) and reads or writes
// nothing.
#include "lucid/backend/cuda/sources.h"

namespace lucid::cuda {

extern const char* const kIndexSource = R"CUDA(
#define LUCID_ERR_INDEX 1
__device__ __forceinline__ i64 read_index(const void* p, int is64, i64 i) {
  return is64 ? ((const i64*)p)[i] : i64(((const i32*)p)[i]);
}
__device__ __forceinline__ bool wrap_index(i64& v, i64 size, int* err) {
  if (v < -size || v >= size) { report_error(err, LUCID_ERR_INDEX); return false; }
  if (v < 0) v += size;
  return true;
}

// out[pos] = x[pos with coordinate `axis` replaced by index[pos]]; pos runs
// over the index's shape (ix), xs holds x's strides.
struct GatherArgs { const void* x; const void* index; void* out; int* err; i64 n; int idx64, axis; i64 size;
                    Indexer ix; i64 xs[LUCID_MAXD]; };
template <class W>
__device__ __forceinline__ void gather_impl(const GatherArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 rest = i, off = 0;
    for (int d = a.ix.nd - 1; d >= 0; --d) {
      const i64 c = rest % a.ix.shape[d];
      rest /= a.ix.shape[d];
      if (d != a.axis) off += c * a.xs[d];
    }
    i64 v = read_index(a.index, a.idx64, i);
    if (!wrap_index(v, a.size, a.err)) { ((W*)a.out)[i] = W(0); continue; }
    ((W*)a.out)[i] = ((const W*)a.x)[off + v * a.xs[a.axis]];
  }
}
#define DEF(W, S) extern "C" __global__ void gather_##S(const GatherArgs a) { gather_impl<W>(a); }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

// out (already a copy of base) at index positions gets src written or added;
// pos runs over the index's shape, os/ss are out's and src's strides.
// Accumulation is deterministic and in the CPU's order: of the positions that
// add into one element (they differ only along the axis), the first adds them
// all in order and the others do nothing. Without accumulation the last
// position naming an element writes it, as on the CPU: scatter_claim first
// records in winner (one word per element of out) the largest position + 1
// naming each element; winner is null when no two positions can collide.
struct ScatterArgs { void* out; const void* index; const void* src; int* err; unsigned* winner; i64 n;
                     int idx64, axis, accumulate; i64 size; Indexer ix; i64 os[LUCID_MAXD]; i64 ss[LUCID_MAXD]; };
__device__ __forceinline__ bool index_equals(const void* p, int is64, i64 i, i64 v, i64 size) {
  i64 w = read_index(p, is64, i);
  if (w < 0) w += size;
  return w == v;
}
// Where position i (whose wrapped index is v) writes in out and reads in src;
// at is its coordinate along the axis, step the positions between two along it.
struct ScatterPlace { i64 off, soff, at, step; };
__device__ __forceinline__ ScatterPlace scatter_place(const ScatterArgs& a, i64 i, i64 v) {
  ScatterPlace p{0, 0, 0, 1};
  i64 rest = i;
  for (int d = a.ix.nd - 1; d >= 0; --d) {
    const i64 c = rest % a.ix.shape[d];
    rest /= a.ix.shape[d];
    p.off += (d == a.axis ? v : c) * a.os[d];
    p.soff += c * a.ss[d];
    if (d == a.axis) p.at = c;
    if (d > a.axis) p.step *= a.ix.shape[d];
  }
  return p;
}
#if LUCID_UNTYPED_SHARD
extern "C" __global__ void scatter_claim(const ScatterArgs a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 v = read_index(a.index, a.idx64, i);
    if (!wrap_index(v, a.size, a.err)) continue;
    atomicMax(a.winner + scatter_place(a, i, v).off, unsigned(i + 1));
  }
}
#endif
template <class T>
__device__ __forceinline__ void scatter_impl(const ScatterArgs& a) {
  for (i64 i = global_index(); i < a.n; i += global_stride()) {
    i64 v = read_index(a.index, a.idx64, i);
    if (!wrap_index(v, a.size, a.err)) continue;
    const ScatterPlace p = scatter_place(a, i, v);
    if (!a.accumulate) {
      if (!a.winner || a.winner[p.off] == unsigned(i + 1)) ((T*)a.out)[p.off] = ((const T*)a.src)[p.soff];
      continue;
    }
    bool first = true;  // i is the first position along the axis with index v
    for (i64 k = 0; k < p.at && first; ++k)
      first = !index_equals(a.index, a.idx64, i - (p.at - k) * p.step, v, a.size);
    if (!first) continue;
    const i64 len = a.ix.shape[a.axis];
    T acc = ((const T*)a.out)[p.off];  // rounded to T after each addition, as the CPU's
    for (i64 k = p.at; k < len; ++k)
      if (index_equals(a.index, a.idx64, i + (k - p.at) * p.step, v, a.size))
        st(&acc, 0, ld(&acc, 0) + ld((const T*)a.src, p.soff + (k - p.at) * a.ss[a.axis]));
    ((T*)a.out)[p.off] = acc;
  }
}
#define DEF(T, S) extern "C" __global__ void scatter_##S(const ScatterArgs a) { scatter_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// x [outer, size, inner] -> out [outer, n, inner] rows at index.
struct IndexSelectArgs { const void* x; const void* index; void* out; int* err; i64 outer, size, n, inner; int idx64; };
template <class W>
__device__ __forceinline__ void index_select_impl(const IndexSelectArgs& a) {
  const i64 total = a.outer * a.n * a.inner;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 in = q % a.inner, j = (q / a.inner) % a.n, o = q / (a.inner * a.n);
    i64 v = read_index(a.index, a.idx64, j);
    if (!wrap_index(v, a.size, a.err)) { ((W*)a.out)[q] = W(0); continue; }
    ((W*)a.out)[q] = ((const W*)a.x)[(o * a.size + v) * a.inner + in];
  }
}
#define DEF(W, S) extern "C" __global__ void index_select_##S(const IndexSelectArgs a) { index_select_impl<W>(a); }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

// IndexAdd, deterministic and in the CPU's order, in two passes. index_chain
// links the index positions that name one row: next[j] becomes the following
// position with j's row (all ones at the last, which reads as -1 in i64) and
// follower[j] 1 when an earlier position names it too (both start as memsets:
// all ones, zeros). Every pair of positions is compared, one block per tile of
// positions (a thread each) and tile of candidates (in shared memory), so the
// comparisons spread over the whole device; the candidates' tiles combine
// through atomicMin. index_add: each chain's first position adds the chain's
// source rows into out [outer, size, inner] (a copy of base) in order; src is
// [outer, n, inner]. An out-of-range index is reported once (by the blocks of
// the first candidates' tile) and adds nothing.
struct IndexChainArgs { const void* index; unsigned long long* next; int* follower; int* err; i64 n, size, position_tiles,
                        candidate_tiles; int idx64; };
#define LUCID_CHAIN_TILE 128
#if LUCID_UNTYPED_SHARD
extern "C" __global__ void index_chain(const IndexChainArgs a) {
  __shared__ i64 tile[LUCID_CHAIN_TILE];  // wrapped candidates, -1 where out of range
  const i64 blocks = a.position_tiles * a.candidate_tiles;
  for (i64 b = blockIdx.x; b < blocks; b += gridDim.x) {  // block-uniform
    const i64 j = (b / a.candidate_tiles) * blockDim.x + threadIdx.x;
    const i64 t = (b % a.candidate_tiles) * LUCID_CHAIN_TILE, m = min(i64(LUCID_CHAIN_TILE), a.n - t);
    __syncthreads();  // the previous tile has been read
    for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
      i64 w = read_index(a.index, a.idx64, t + k);
      tile[k] = (w < -a.size || w >= a.size) ? -1 : (w < 0 ? w + a.size : w);
    }
    __syncthreads();
    if (j >= a.n) continue;
    i64 v = read_index(a.index, a.idx64, j);
    if (t == 0 ? !wrap_index(v, a.size, a.err) : (v < -a.size || v >= a.size)) continue;
    if (v < 0) v += a.size;
    bool follower = false;
    i64 next = -1;
    for (i64 k = 0; k < m; ++k) {  // ascending: the first later match is the nearest
      if (tile[k] != v) continue;
      if (t + k < j) follower = true;
      else if (t + k > j) { next = t + k; break; }
    }
    if (follower) a.follower[j] = 1;
    if (next >= 0) atomicMin(a.next + j, (unsigned long long)next);
  }
}
#endif

struct IndexAddArgs { void* out; const void* index; const void* src; const i64* next; const int* follower; i64 outer,
                      size, n, inner; int idx64; };
template <class T>
__device__ __forceinline__ void index_add_impl(const IndexAddArgs& a) {
  const i64 total = a.outer * a.n * a.inner;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 in = q % a.inner, j = (q / a.inner) % a.n, o = q / (a.inner * a.n);
    if (a.follower[j]) continue;
    i64 v = read_index(a.index, a.idx64, j);
    if (v < -a.size || v >= a.size) continue;
    if (v < 0) v += a.size;
    const i64 dst = (o * a.size + v) * a.inner + in;
    T acc = ((const T*)a.out)[dst];  // rounded to T after each addition, as the CPU's
    for (i64 k = j; k >= 0; k = a.next[k]) st(&acc, 0, ld(&acc, 0) + ld((const T*)a.src, (o * a.n + k) * a.inner + in));
    ((T*)a.out)[dst] = acc;
  }
}
#define DEF(T, S) extern "C" __global__ void index_add_##S(const IndexAddArgs a) { index_add_impl<T>(a); }
LUCID_FOR_ALL_TYPES(DEF)
#undef DEF

// ------------------------------------------------------- sliding windows
struct Window { i64 kh, kw, sh, sw, dh, dw, pad_top, pad_left; };

// x [N, C, H, W] -> cols [C*kh*kw, N, OH*OW]; taps over the padding read `pad`.
struct Im2ColArgs { const void* x; void* cols; i64 n, c, h, w, oh, ow; Window win; u64 pad; };
template <class W>
__device__ __forceinline__ void im2col_impl(const Im2ColArgs& a) {
  const i64 l = a.oh * a.ow, kk = a.win.kh * a.win.kw, total = a.c * kk * a.n * l;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 pos = q % l, img = (q / l) % a.n, row = q / (l * a.n);
    const i64 ch = row / kk, i = (row / a.win.kw) % a.win.kh, j = row % a.win.kw;
    const i64 ih = (pos / a.ow) * a.win.sh - a.win.pad_top + i * a.win.dh;
    const i64 iw = (pos % a.ow) * a.win.sw - a.win.pad_left + j * a.win.dw;
    W v = (W)a.pad;
    if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) v = ((const W*)a.x)[((img * a.c + ch) * a.h + ih) * a.w + iw];
    ((W*)a.cols)[q] = v;
  }
}
#define DEF(W, S) extern "C" __global__ void im2col_##S(const Im2ColArgs a) { im2col_impl<W>(a); }
LUCID_FOR_WIDTHS(DEF)
#undef DEF

// Output element (img, ch, y, x) sums, tap by tap in order, the columns that
// read it (the CPU's order, so float32 sums agree bit for bit).
struct Col2ImArgs { const void* cols; void* x; i64 n, c, h, w, oh, ow; Window win; };
template <class T>
__device__ __forceinline__ void col2im_impl(const Col2ImArgs& a) {
  typedef typename Compute<T>::type A;
  const i64 l = a.oh * a.ow, kk = a.win.kh * a.win.kw, total = a.n * a.c * a.h * a.w;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 xw = q % a.w, yh = (q / a.w) % a.h, ch = (q / (a.w * a.h)) % a.c, img = q / (a.w * a.h * a.c);
    A acc = 0;
    for (i64 i = 0; i < a.win.kh; ++i) {
      const i64 ty = yh + a.win.pad_top - i * a.win.dh;
      if (ty < 0 || ty % a.win.sh) continue;
      const i64 r = ty / a.win.sh;
      if (r >= a.oh) continue;
      for (i64 j = 0; j < a.win.kw; ++j) {
        const i64 tx = xw + a.win.pad_left - j * a.win.dw;
        if (tx < 0 || tx % a.win.sw) continue;
        const i64 col = tx / a.win.sw;
        if (col >= a.ow) continue;
        acc += A(ld((const T*)a.cols, ((ch * kk + i * a.win.kw + j) * a.n + img) * l + r * a.ow + col));
      }
    }
    st((T*)a.x, q, acc);
  }
}
#define DEF(T, S) extern "C" __global__ void col2im_##S(const Col2ImArgs a) { col2im_impl<T>(a); }
LUCID_FOR_NUMERIC_TYPES(DEF)
#undef DEF

// Max pooling: padding counts as the lowest value, a NaN wins, ties keep the
// first maximum; the index is flat in the input plane (PyTorch's). A window
// over padding alone gives the lowest value and its first tap's position.
struct MaxPoolArgs { const void* x; void* out; i64* idx; i64 planes, h, w, oh, ow; Window win; };
template <class T>
__device__ __forceinline__ void max_pool_impl(const MaxPoolArgs& a) {
  typedef typename Compute<T>::type C;
  const i64 total = a.planes * a.oh * a.ow;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 qc = q % a.ow, r = (q / a.ow) % a.oh, p = q / (a.ow * a.oh);
    const T* plane = (const T*)a.x + p * a.h * a.w;
    const i64 top = r * a.win.sh - a.win.pad_top, left = qc * a.win.sw - a.win.pad_left;
    const i64 h0 = top < 0 ? top + (-top + a.win.dh - 1) / a.win.dh * a.win.dh : top;
    const i64 w0 = left < 0 ? left + (-left + a.win.dw - 1) / a.win.dw * a.win.dw : left;
    C best = lowest_value<C>();
    i64 where = h0 * a.w + w0;
    for (i64 i = 0; i < a.win.kh; ++i) {
      const i64 ih = top + i * a.win.dh;
      if (ih < 0 || ih >= a.h) continue;
      for (i64 j = 0; j < a.win.kw; ++j) {
        const i64 iw = left + j * a.win.dw;
        if (iw < 0 || iw >= a.w) continue;
        const C v = ld(plane, ih * a.w + iw);
        const bool wins = v > best || v != v;
        if (wins) { best = v; where = ih * a.w + iw; }
      }
    }
    st((T*)a.out, q, best);
    a.idx[q] = where;
  }
}
#define DEF(T, S) extern "C" __global__ void max_pool_##S(const MaxPoolArgs a) { max_pool_impl<T>(a); }
LUCID_FOR_NUMERIC_TYPES(DEF)
#undef DEF

// dx[plane, pos] = sum of grad over the windows whose index is pos, in
// output order (the CPU's).
struct MaxPoolBackwardArgs { const void* g; const i64* idx; void* dx; i64 planes, h, w, oh, ow; Window win; };
template <class T>
__device__ __forceinline__ void max_pool_backward_impl(const MaxPoolBackwardArgs& a) {
  typedef typename Compute<T>::type A;
  const i64 total = a.planes * a.h * a.w, l = a.oh * a.ow;
  for (i64 q = global_index(); q < total; q += global_stride()) {
    const i64 pos = q % (a.h * a.w), p = q / (a.h * a.w);
    const i64 yh = pos / a.w, xw = pos % a.w;
    const T* g = (const T*)a.g + p * l;
    const i64* idx = a.idx + p * l;
    // Output rows/columns whose window can contain (yh, xw).
    i64 r_lo = yh + a.win.pad_top - (a.win.kh - 1) * a.win.dh, c_lo = xw + a.win.pad_left - (a.win.kw - 1) * a.win.dw;
    r_lo = r_lo <= 0 ? 0 : (r_lo + a.win.sh - 1) / a.win.sh;
    c_lo = c_lo <= 0 ? 0 : (c_lo + a.win.sw - 1) / a.win.sw;
    i64 r_hi = (yh + a.win.pad_top) / a.win.sh, c_hi = (xw + a.win.pad_left) / a.win.sw;
    if (r_hi > a.oh - 1) r_hi = a.oh - 1;
    if (c_hi > a.ow - 1) c_hi = a.ow - 1;
    A acc = 0;
    for (i64 r = r_lo; r <= r_hi; ++r)
      for (i64 c = c_lo; c <= c_hi; ++c) {
        const i64 k = r * a.ow + c;
        if (idx[k] == pos) acc += A(ld(g, k));
      }
    st((T*)a.dx, q, acc);
  }
}
#define DEF(T, S) extern "C" __global__ void max_pool_backward_##S(const MaxPoolBackwardArgs a) { max_pool_backward_impl<T>(a); }
LUCID_FOR_FLOAT_TYPES(DEF)
#undef DEF
)CUDA";

}  // namespace lucid::cuda
