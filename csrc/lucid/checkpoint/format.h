#pragma once
// Lucid's checkpoint format: the one reader and writer behind Python's
// lucid.save / lucid.load and the C++ API's lucid::save / lucid::load.
//
// Layout, version 2 (all integers little-endian):
//   offset 0   8 bytes   magic "LUCIDCKP"
//   offset 8   uint32    format version (2)
//   offset 12  uint64    H, the length of the header
//   offset 20  uint32    CRC-32C of the header
//   offset 24  H bytes   header: UTF-8 JSON (below)
//   zeros up to a multiple of 64, where the data section starts
//   data section, D bytes, to the end of the file: each entry's bytes at its
//   offset (relative to the data section, a multiple of 64), zeros between
// Version 1, which is still read, has no header checksum (the header starts
// at offset 20) and no per-entry checksums.
//
// The header is {"format": "lucid", "data_size": D, "tensors": [...],
// "root": V}. Each entry of "tensors" is a block of the data section:
//   {"dtype": name, "shape": [...], "offset": o, "nbytes": n, "crc32c": c}
// and, by "kind":
//   (none)     a tensor: "device", "requires_grad", and "parameter": true
//              for an nn.Parameter. Element encodings: bool one byte 0/1,
//              bfloat16 its 16-bit pattern, every other dtype its IEEE or
//              two's-complement little-endian form, in C order.
//   "ndarray"  a NumPy array (NumPy's dtype names: int8 .. uint64,
//              float16/32/64, complex64/128, bool); "scalar": true for a
//              NumPy scalar (shape []).
//   "pickle"   dtype "uint8": the bytes of a pickled Python object.
//
// V encodes the saved object: JSON null, booleans, integers, finite floats,
// strings and arrays stand for None, bool, int, float, str and list; every
// JSON object is a tagged value {"t": tag, ...}:
//   {"t": "tensor" | "ndarray", "i": k}   entry k (an object saved twice is
//                                        stored once and loads as one)
//   {"t": "pickle", "i": k, "refs": [V, ...]}   a pickled object and the
//                                        tensors and arrays it refers to
//   {"t": "tuple", "v": [...]}
//   {"t": "dict" | "odict", "v": [[key, value], ...]}   keys keep their
//                                        type (int keys of optimizer state
//                                        stay ints); an odict may carry
//                                        "meta" (its _metadata)
//   {"t": "float", "v": "nan" | "inf" | "-inf"}
//   {"t": "int", "v": "<decimal digits>"}   an integer outside int64
//   {"t": "dtype", "v": name}, {"t": "device", "v": "cpu"}
//
// Reading trusts nothing: every size, offset and shape is checked (overflow
// included), entries may not overlap, nesting is bounded, and in version 2
// the header, each entry and the zero padding are verified, so a damaged
// byte anywhere raises CheckpointError naming the file and, for data, the
// object it belongs to.
#include <cstdint>
#include <functional>
#include <string>

#include "lucid/checkpoint/io.h"
#include "lucid/checkpoint/value.h"

namespace lucid::checkpoint {

inline constexpr uint32_t kFormatVersion = 2;
// Containers nested deeper than this are refused when saving and loading.
inline constexpr int kMaxNesting = 1000;
// Tensors and arrays have at most this many dimensions.
inline constexpr int kMaxDims = 64;

// Moves a loaded tensor (on the CPU) to where the caller wants it, given the
// device it was saved from.
using MapLocation = std::function<Tensor(Tensor loaded, const std::string& saved_device)>;

struct LoadOptions {
  // null: each tensor goes to the device it was saved from (Error when that
  // device is not available here).
  MapLocation map_location;
  // Bytes may follow the checkpoint (a stream holding more than one).
  bool allow_trailing_bytes = false;
};

// What a tensor shows, row-major on the host: what a checkpoint stores (never
// more of its storage than that).
Tensor host_contiguous(const Tensor& t);

// Writes `obj` to `path` atomically (a temporary file in the same directory,
// renamed over the target), or to `sink`. TypeError for what the format
// cannot hold (a symbolic tensor, a list as a dict key, nesting deeper than
// kMaxNesting), raised before any byte is written.
void save(const Value& obj, const std::string& path);
void save(const Value& obj, const Sink& sink);

// Reads a checkpoint. CheckpointError for a damaged or crafted file.
Value load(const std::string& path, const LoadOptions& options = {});
// Reads the checkpoint at the start of `source`; `name` is the file's name
// in messages; `consumed`, when given, receives the checkpoint's length.
Value load(Source& source, const std::string& name, const LoadOptions& options = {}, int64_t* consumed = nullptr);

}  // namespace lucid::checkpoint
