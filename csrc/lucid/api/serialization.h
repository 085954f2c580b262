#pragma once
// lucid::save / lucid::load: checkpoints in the format of Python's
// lucid.save / lucid.load (python/lucid/serialization.py documents it:
// magic, version, a JSON header, then each tensor's raw little-endian
// bytes). A file written here loads in Python and the other way round.
//
// What a file holds is a Value: None, bool, int, float, str, list, tuple,
// dict (insertion-ordered, keys of any scalar kind; Python's OrderedDict
// loads as a dict marked ordered), tensors, dtypes and devices.
//
//   lucid::Value sd = lucid::Value::dict();
//   sd.set("0.weight", w);                  // a module state_dict
//   lucid::save(lucid::Value::dict({{"model", sd}, {"epoch", 3}}), "ckpt.lucid");
//   lucid::Value ck = lucid::load("ckpt.lucid");
//   lucid::Tensor w2 = ck["model"]["0.weight"].tensor();
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/tensor.h"

namespace lucid {

// A file that is not a readable Lucid checkpoint (Python's
// lucid.serialization.CheckpointError, a ValueError); the message names the
// file and what is wrong with it, as in Python.
class CheckpointError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class Value {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float, String, List, Tuple, Dict, Tensor, DType, Device };
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

  Kind kind() const { return kind_; }
  const char* kind_name() const;  // "None", "bool", "int", ... as Python names the type
  bool is_none() const { return kind_ == Kind::None; }

  // Typed access: TypeError naming both kinds on a mismatch. number()
  // accepts bool, int and float.
  bool boolean() const;
  int64_t integer() const;
  double number() const;
  const std::string& string() const;
  const lucid::Tensor& tensor() const;
  lucid::DType dtype() const;
  const lucid::Device& device() const;
  // Elements of a list or tuple.
  const std::vector<Value>& elements() const;
  std::vector<Value>& elements();
  // Items of a dict, in order.
  const Items& items() const;
  Items& items();
  bool ordered() const;  // a dict saved as an OrderedDict
  size_t size() const;   // elements or items

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

  // Structural equality (tensors compare by identity, floats as numbers,
  // NaN equal to NaN).
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }
  std::string repr() const;  // Python-like, for messages and debugging

 private:
  Kind kind_ = Kind::None;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<std::vector<Value>> elements_;
  std::shared_ptr<Items> items_;
  lucid::Tensor tensor_;
  lucid::DType dtype_ = lucid::DType::Float32;
  lucid::Device device_;
};

// An ordered dict {name: tensor}, as Module.state_dict() gives (tensors
// detached, so saving does not keep autograd history alive).
Value state_dict(const std::vector<std::pair<std::string, Tensor>>& named_tensors);

// Writes `obj` to `path` atomically (a temporary file in the same directory,
// renamed over the target). Throws TypeError for what the format cannot hold
// (a symbolic tensor, a container key) before writing any byte.
void save(const Value& obj, const std::string& path);
// Reads a checkpoint; `map_location` moves every tensor to that device.
// CheckpointError for a damaged file; Error when a tensor's device is not
// available and no map_location is given.
Value load(const std::string& path, std::optional<Device> map_location = std::nullopt);

}  // namespace lucid
