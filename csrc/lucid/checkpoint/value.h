#pragma once
// What a checkpoint holds: a Value tree. Python's lucid.save converts its
// object into one (csrc/python/checkpoint.cpp) and the C++ API builds one by
// hand; both are written by the one writer in checkpoint/format.h.
//
// Kinds: None, bool, int (64-bit; BigInt holds any wider Python int as
// decimal text), float, str, list, tuple, dict (insertion-ordered, keys of
// any scalar kind; `ordered` marks Python's OrderedDict, which may carry
// `_metadata`), tensors (optionally marked as nn.Parameter), dtypes,
// devices, NumPy arrays and scalars (Array), and Pickled: a Python object
// the data kinds cannot express (an nn.Module, a set, a user class), kept as
// pickle bytes whose tensors and arrays are stored beside it. C++ carries a
// Pickled value through unchanged; only Python can rebuild it, and
// lucid.load does so only for allow-listed classes unless told otherwise.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/shape.h"
#include "lucid/core/tensor.h"

namespace lucid {

// A file that is not a readable checkpoint (Python's
// lucid.serialization.CheckpointError, a ValueError); the message names the
// file and what is wrong with it.
class CheckpointError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A NumPy array (or, with `scalar`, a NumPy scalar such as np.float32(1.5))
// in C order and little-endian. `dtype` is NumPy's name of the element type.
struct Array {
  std::string dtype;
  Shape shape;
  bool scalar = false;
  std::shared_ptr<const uint8_t> data;  // nbytes() bytes; whoever owns them
  int64_t nbytes() const;
};
// Bytes per element of a NumPy dtype name Lucid stores ("bool", "int8" ..
// "uint64", "float16", "float32", "float64", "complex64", "complex128"); 0
// for any other name.
size_t array_itemsize(const std::string& dtype);

struct Pickled;

class Value {
 public:
  enum class Kind : uint8_t {
    None, Bool, Int, BigInt, Float, String, List, Tuple, Dict, Tensor, DType, Device, Array, Pickled
  };
  using Items = std::vector<std::pair<Value, Value>>;

  Value() = default;  // None
  Value(bool v);                // NOLINT
  Value(int v);                 // NOLINT
  Value(int64_t v);             // NOLINT
  Value(double v);              // NOLINT
  Value(const char* v);         // NOLINT
  Value(std::string v);         // NOLINT
  Value(lucid::Tensor v);       // NOLINT
  Value(lucid::DType v);        // NOLINT
  Value(lucid::Device v);       // NOLINT
  static Value list(std::vector<Value> elements = {});
  static Value tuple(std::vector<Value> elements = {});
  // `ordered`: saved as an OrderedDict (what Module.state_dict() returns).
  static Value dict(Items items = {}, bool ordered = false);
  // A tensor that loads in Python as an nn.Parameter.
  static Value parameter(lucid::Tensor t);
  // An integer outside int64, as decimal text ("-123..."); InvalidArgument
  // for text that is not one.
  static Value big_integer(std::string digits);
  // TypeError for an unknown dtype, a scalar with a shape, or missing data.
  static Value array(lucid::Array a);
  static Value pickled(std::string bytes, std::vector<Value> refs);

  Kind kind() const { return kind_; }
  const char* kind_name() const;  // "None", "bool", "int", ... as Python names the type
  bool is_none() const { return kind_ == Kind::None; }

  // Typed access: TypeError naming both kinds on a mismatch. number()
  // accepts bool, int and float.
  bool boolean() const;
  int64_t integer() const;
  const std::string& big_integer() const;
  double number() const;
  const std::string& string() const;
  const lucid::Tensor& tensor() const;
  bool is_parameter() const { return kind_ == Kind::Tensor && b_; }
  lucid::DType dtype() const;
  const lucid::Device& device() const;
  const lucid::Array& array() const;
  const lucid::Pickled& pickled() const;
  // Elements of a list or tuple.
  const std::vector<Value>& elements() const;
  std::vector<Value>& elements();
  // Items of a dict, in order.
  const Items& items() const;
  Items& items();
  bool ordered() const;  // a dict saved as an OrderedDict
  size_t size() const;   // elements or items
  // An OrderedDict's `_metadata` (Module.state_dict() keeps each module's
  // version there); null when it has none.
  const Value* metadata() const;
  void set_metadata(Value meta);

  // Dict lookup: find() gives null when absent, at()/[] throw IndexError
  // naming the key; set() replaces a present key or appends.
  const Value* find(const Value& key) const;
  const Value& at(const Value& key) const;
  const Value& operator[](const Value& key) const { return at(key); }
  Value& set(Value key, Value value);
  // List/tuple element (IndexError when out of range); on a dict, the
  // value of that int key.
  const Value& operator[](size_t index) const;
  const Value& operator[](int index) const { return (*this)[size_t(index)]; }

  // Structural equality (tensors, arrays and pickled objects compare by
  // identity, floats as numbers, NaN equal to NaN).
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }
  std::string repr() const;  // Python-like, for messages and debugging

  // Identity of a tensor, array or pickled object (how a writer stores a
  // shared one once); null for other kinds.
  const void* identity() const;

 private:
  Kind kind_ = Kind::None;
  bool b_ = false;  // Bool's value; a dict's `ordered`; a tensor's Parameter mark
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;  // String, BigInt
  std::shared_ptr<std::vector<Value>> elements_;
  std::shared_ptr<Items> items_;
  std::shared_ptr<const Value> meta_;
  lucid::Tensor tensor_;
  lucid::DType dtype_ = lucid::DType::Float32;
  lucid::Device device_;
  std::shared_ptr<const lucid::Array> array_;
  std::shared_ptr<const lucid::Pickled> pickled_;
};

// A pickled Python object; `refs` are the tensors and arrays it refers to
// (its persistent ids, in order).
struct Pickled {
  std::string bytes;
  std::vector<Value> refs;
};

// An ordered dict {name: tensor}, as Module.state_dict() gives (tensors
// detached, so saving does not keep autograd history alive).
Value state_dict(const std::vector<std::pair<std::string, Tensor>>& named_tensors);

// Python's repr of a str, for messages.
std::string py_str_repr(const std::string& s);

}  // namespace lucid
