#include "lucid/checkpoint/value.h"

#include <cmath>
#include <cstdio>

#include "lucid/optim/hyper.h"

namespace lucid {

// ====================================================================== Array
size_t array_itemsize(const std::string& dtype) {
  static const std::pair<const char*, size_t> sizes[] = {
      {"bool", 1},    {"int8", 1},    {"int16", 2},   {"int32", 4},     {"int64", 8},
      {"uint8", 1},   {"uint16", 2},  {"uint32", 4},  {"uint64", 8},    {"float16", 2},
      {"float32", 4}, {"float64", 8}, {"complex64", 8}, {"complex128", 16}};
  for (const auto& [name, size] : sizes)
    if (dtype == name) return size;
  return 0;
}

int64_t Array::nbytes() const { return numel(shape) * int64_t(array_itemsize(dtype)); }

// ====================================================================== Value
Value::Value(bool v) : kind_(Kind::Bool), b_(v) {}
Value::Value(int v) : kind_(Kind::Int), i_(v) {}
Value::Value(int64_t v) : kind_(Kind::Int), i_(v) {}
Value::Value(double v) : kind_(Kind::Float), f_(v) {}
Value::Value(const char* v) : kind_(Kind::String), s_(v) {}
Value::Value(std::string v) : kind_(Kind::String), s_(std::move(v)) {}
Value::Value(lucid::Tensor v) : kind_(Kind::Tensor), tensor_(std::move(v)) {
  LUCID_CHECK_T(TypeError, tensor_.defined(), "an undefined tensor cannot be stored in a Value");
}
Value::Value(lucid::DType v) : kind_(Kind::DType), dtype_(v) {}
Value::Value(lucid::Device v) : kind_(Kind::Device), device_(v) {}

Value Value::list(std::vector<Value> elements) {
  Value v;
  v.kind_ = Kind::List;
  v.elements_ = std::make_shared<std::vector<Value>>(std::move(elements));
  return v;
}

Value Value::tuple(std::vector<Value> elements) {
  Value v = list(std::move(elements));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict(Items items, bool ordered) {
  Value v;
  v.kind_ = Kind::Dict;
  v.b_ = ordered;
  v.items_ = std::make_shared<Items>();
  for (auto& [k, x] : items) v.set(std::move(k), std::move(x));
  return v;
}

Value Value::parameter(lucid::Tensor t) {
  Value v(std::move(t));
  v.b_ = true;
  return v;
}

Value Value::big_integer(std::string digits) {
  const size_t start = !digits.empty() && digits[0] == '-' ? 1 : 0;
  bool ok = digits.size() > start && digits.size() < 10000;
  for (size_t k = start; ok && k < digits.size(); ++k) ok = digits[k] >= '0' && digits[k] <= '9';
  if (!ok) fail<InvalidArgument>("not a decimal integer: ", py_str_repr(digits.substr(0, 100)));
  Value v;
  v.kind_ = Kind::BigInt;
  v.s_ = std::move(digits);
  return v;
}

Value Value::array(lucid::Array a) {
  if (!array_itemsize(a.dtype)) fail<TypeError>("unsupported NumPy dtype ", py_str_repr(a.dtype));
  for (int64_t d : a.shape) LUCID_CHECK_T(TypeError, d >= 0, "an array shape has a negative size");
  LUCID_CHECK_T(TypeError, !a.scalar || a.shape.empty(), "a NumPy scalar has no shape");
  LUCID_CHECK_T(TypeError, a.data || a.nbytes() == 0, "an array without data");
  Value v;
  v.kind_ = Kind::Array;
  v.array_ = std::make_shared<const lucid::Array>(std::move(a));
  return v;
}

Value Value::pickled(std::string bytes, std::vector<Value> refs) {
  for (const Value& r : refs)
    LUCID_CHECK_T(TypeError, r.kind() == Kind::Tensor || r.kind() == Kind::Array,
                  "a pickled object refers only to tensors and arrays, got a ", r.kind_name());
  Value v;
  v.kind_ = Kind::Pickled;
  v.pickled_ = std::make_shared<const lucid::Pickled>(lucid::Pickled{std::move(bytes), std::move(refs)});
  return v;
}

const char* Value::kind_name() const {
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int:
    case Kind::BigInt: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Tensor: return "Tensor";
    case Kind::DType: return "dtype";
    case Kind::Device: return "device";
    case Kind::Array: return "ndarray";
    case Kind::Pickled: return "pickled object";
  }
  return "?";
}

static void expect(const Value& v, bool ok, const char* wanted) {
  if (!ok) fail<TypeError>("expected a ", wanted, ", got a ", v.kind_name(), " value");
}

bool Value::boolean() const {
  expect(*this, kind_ == Kind::Bool, "bool");
  return b_;
}
int64_t Value::integer() const {
  expect(*this, kind_ == Kind::Int, "int");
  return i_;
}
const std::string& Value::big_integer() const {
  expect(*this, kind_ == Kind::BigInt, "int outside int64");
  return s_;
}
double Value::number() const {
  expect(*this, kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool, "number");
  return kind_ == Kind::Float ? f_ : kind_ == Kind::Int ? double(i_) : double(b_);
}
const std::string& Value::string() const {
  expect(*this, kind_ == Kind::String, "str");
  return s_;
}
const lucid::Tensor& Value::tensor() const {
  expect(*this, kind_ == Kind::Tensor, "Tensor");
  return tensor_;
}
lucid::DType Value::dtype() const {
  expect(*this, kind_ == Kind::DType, "dtype");
  return dtype_;
}
const lucid::Device& Value::device() const {
  expect(*this, kind_ == Kind::Device, "device");
  return device_;
}
const lucid::Array& Value::array() const {
  expect(*this, kind_ == Kind::Array, "ndarray");
  return *array_;
}
const lucid::Pickled& Value::pickled() const {
  expect(*this, kind_ == Kind::Pickled, "pickled object");
  return *pickled_;
}
const std::vector<Value>& Value::elements() const {
  expect(*this, kind_ == Kind::List || kind_ == Kind::Tuple, "list or tuple");
  return *elements_;
}
std::vector<Value>& Value::elements() {
  expect(*this, kind_ == Kind::List || kind_ == Kind::Tuple, "list or tuple");
  // Copy on write: copies of a Value never see each other's edits.
  if (elements_.use_count() > 1) elements_ = std::make_shared<std::vector<Value>>(*elements_);
  return *elements_;
}
const Value::Items& Value::items() const {
  expect(*this, kind_ == Kind::Dict, "dict");
  return *items_;
}
Value::Items& Value::items() {
  expect(*this, kind_ == Kind::Dict, "dict");
  if (items_.use_count() > 1) items_ = std::make_shared<Items>(*items_);
  return *items_;
}
bool Value::ordered() const {
  expect(*this, kind_ == Kind::Dict, "dict");
  return b_;
}
size_t Value::size() const { return kind_ == Kind::Dict ? items().size() : elements().size(); }

const Value* Value::metadata() const {
  expect(*this, kind_ == Kind::Dict, "dict");
  return meta_.get();
}
void Value::set_metadata(Value meta) {
  expect(*this, kind_ == Kind::Dict && b_, "OrderedDict (an ordered dict)");
  meta_ = std::make_shared<const Value>(std::move(meta));
}

const Value* Value::find(const Value& key) const {
  for (const auto& [k, v] : items())
    if (k == key) return &v;
  return nullptr;
}

const Value& Value::at(const Value& key) const {
  const Value* v = find(key);
  if (!v) fail<IndexError>("key ", key.repr(), " is not in the dict");
  return *v;
}

Value& Value::set(Value key, Value value) {
  Items& it = items();
  for (auto& kv : it)
    if (kv.first == key) return kv.second = std::move(value);
  it.emplace_back(std::move(key), std::move(value));
  return it.back().second;
}

const Value& Value::operator[](size_t index) const {
  if (kind_ == Kind::Dict) return at(Value(int64_t(index)));  // an int key (optimizer state)
  const auto& e = elements();
  if (index >= e.size()) fail<IndexError>(kind_name(), " index ", index, " out of range for ", e.size(), " elements");
  return e[index];
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::Tensor: return tensor_.impl();
    case Kind::Array: return array_.get();
    case Kind::Pickled: return pickled_.get();
    default: return nullptr;
  }
}

bool Value::operator==(const Value& o) const {
  const bool numeric = (kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool);
  const bool o_numeric = (o.kind_ == Kind::Int || o.kind_ == Kind::Float || o.kind_ == Kind::Bool);
  if (numeric && o_numeric) {
    if (kind_ == Kind::Float || o.kind_ == Kind::Float) {
      const double a = number(), b = o.number();
      return a == b || (std::isnan(a) && std::isnan(b));
    }
    return (kind_ == Kind::Bool ? int64_t(b_) : i_) == (o.kind_ == Kind::Bool ? int64_t(o.b_) : o.i_);
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::None: return true;
    case Kind::String:
    case Kind::BigInt: return s_ == o.s_;
    case Kind::List:
    case Kind::Tuple: return *elements_ == *o.elements_;
    case Kind::Dict: return *items_ == *o.items_;
    case Kind::Tensor:
    case Kind::Array:
    case Kind::Pickled: return identity() == o.identity();
    case Kind::DType: return dtype_ == o.dtype_;
    case Kind::Device: return device_ == o.device_;
    default: return false;
  }
}

std::string py_str_repr(const std::string& s) {
  const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + char(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += char(c);
  }
  return out + q;
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::BigInt: return s_;
    case Kind::Float: return optim::py_float_repr(f_);
    case Kind::String: return py_str_repr(s_);
    case Kind::List:
    case Kind::Tuple: {
      std::string out = kind_ == Kind::List ? "[" : "(";
      for (size_t k = 0; k < elements_->size(); ++k) out += (k ? ", " : "") + (*elements_)[k].repr();
      if (kind_ == Kind::Tuple && elements_->size() == 1) out += ",";
      return out + (kind_ == Kind::List ? "]" : ")");
    }
    case Kind::Dict: {
      std::string out = "{";
      for (size_t k = 0; k < items_->size(); ++k)
        out += (k ? ", " : "") + (*items_)[k].first.repr() + ": " + (*items_)[k].second.repr();
      return out + "}";
    }
    case Kind::Tensor: return b_ ? "Parameter(" + tensor_.str() + ")" : tensor_.str();
    case Kind::DType: return std::string("lucid.") + dtype_name(dtype_);
    case Kind::Device: return "device(type='" + device_.str() + "')";
    case Kind::Array: {
      std::string shape;
      for (size_t d = 0; d < array_->shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(array_->shape[d]);
      return array_->scalar ? "numpy." + array_->dtype + "(...)"
                            : "ndarray(shape=[" + shape + "], dtype=" + array_->dtype + ")";
    }
    case Kind::Pickled:
      return "<pickled Python object, " + std::to_string(pickled_->bytes.size()) + " bytes>";
  }
  return "?";
}

Value state_dict(const std::vector<std::pair<std::string, Tensor>>& named_tensors) {
  Value out = Value::dict({}, /*ordered=*/true);
  for (const auto& [name, t] : named_tensors) out.set(name, t.detach());
  return out;
}

}  // namespace lucid
