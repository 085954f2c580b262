#include "lucid/api/serialization.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <locale>
#include <sstream>
#include <unordered_map>

#include "lucid/ops/ops.h"
#include "lucid/optim/hyper.h"

namespace lucid {

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

const char* Value::kind_name() const {
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Tensor: return "Tensor";
    case Kind::DType: return "dtype";
    case Kind::Device: return "device";
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
    case Kind::String: return s_ == o.s_;
    case Kind::List:
    case Kind::Tuple: return *elements_ == *o.elements_;
    case Kind::Dict: return *items_ == *o.items_;
    case Kind::Tensor: return tensor_.same(o.tensor_);
    case Kind::DType: return dtype_ == o.dtype_;
    case Kind::Device: return device_ == o.device_;
    default: return false;
  }
}

static std::string py_str_repr(const std::string& s) {
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
    case Kind::Tensor: return tensor_.str();
    case Kind::DType: return std::string("lucid.") + dtype_name(dtype_);
    case Kind::Device: return "device(type='" + device_.str() + "')";
  }
  return "?";
}

Value state_dict(const std::vector<std::pair<std::string, Tensor>>& named_tensors) {
  Value out = Value::dict({}, /*ordered=*/true);
  for (const auto& [name, t] : named_tensors) out.set(name, t.detach());
  return out;
}

// ============================================================ file format
namespace {

constexpr char kMagic[8] = {'L', 'U', 'C', 'I', 'D', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kPrefix = 20;  // magic, uint32 version, uint64 header length
constexpr int64_t kAlign = 64;
constexpr const char* kSupported =
    "None, bool, int, float, str, list, tuple, dict (keys: str, int, float, bool, None or tuples of them), "
    "lucid tensors, dtypes and devices";

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool little_endian_host() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

void require_little_endian() {
  if (!little_endian_host())
    fail<NotImplementedError>("Lucid checkpoints are little-endian; this host is big-endian");
}

const std::vector<std::pair<std::string, DType>>& storage_dtypes() {
  static const std::vector<std::pair<std::string, DType>> t = {
      {"bool", DType::Bool},         {"int32", DType::Int32},       {"int64", DType::Int64},
      {"float16", DType::Float16},   {"bfloat16", DType::BFloat16}, {"float32", DType::Float32},
      {"float64", DType::Float64}};
  return t;
}

std::optional<DType> storage_dtype(const std::string& name) {
  for (const auto& [n, d] : storage_dtypes())
    if (n == name) return d;
  return std::nullopt;
}

// ---------------------------------------------------------------- JSON
struct Json {
  enum class T : uint8_t { Null, Bool, Int, Float, String, Array, Object } t = T::Null;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Json> arr;             // array elements / object values
  std::vector<std::string> keys;     // object keys

  const Json* get(const std::string& key) const {
    if (t != T::Object) return nullptr;
    for (size_t k = 0; k < keys.size(); ++k)
      if (keys[k] == key) return &arr[k];
    return nullptr;
  }
  bool is_int() const { return t == T::Int; }
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// Decodes one UTF-8 code point at s[pos]; false for invalid UTF-8.
bool next_code_point(const std::string& s, size_t& pos, uint32_t& cp) {
  const auto c = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = c(pos);
  size_t n;
  if (b0 < 0x80) { cp = b0; n = 1; }
  else if ((b0 & 0xE0) == 0xC0) { cp = b0 & 0x1F; n = 2; }
  else if ((b0 & 0xF0) == 0xE0) { cp = b0 & 0x0F; n = 3; }
  else if ((b0 & 0xF8) == 0xF0) { cp = b0 & 0x07; n = 4; }
  else return false;
  if (pos + n > s.size()) return false;
  for (size_t k = 1; k < n; ++k) {
    if ((c(pos + k) & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (c(pos + k) & 0x3F);
  }
  static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  pos += n;
  return true;
}

// As Python's json.dumps (ensure_ascii): non-ASCII as \uXXXX escapes.
bool write_json_string(std::string& out, const std::string& s) {
  out += '"';
  char buf[16];
  for (size_t pos = 0; pos < s.size();) {
    uint32_t cp;
    if (!next_code_point(s, pos, cp)) return false;
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp >= 0x20 && cp < 0x7f) {
      out += char(cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      const uint32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      out += buf;
    }
  }
  out += '"';
  return true;
}

class JsonParser {
 public:
  JsonParser(const std::string& text) : s_(text) {}  // NOLINT
  // False on malformed input (error() says where).
  bool parse(Json& out) {
    if (!value(out, 0)) return false;
    skip_ws();
    if (pos_ != s_.size()) return bad("extra data");
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool bad(const char* what) {
    if (error_.empty()) error_ = std::string(what) + " at byte " + std::to_string(pos_);
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return bad("invalid literal");
    pos_ += n;
    return true;
  }
  bool value(Json& out, int depth) {
    if (depth > 512) return bad("nesting too deep");
    skip_ws();
    if (pos_ >= s_.size()) return bad("unexpected end of data");
    const char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.t = Json::T::String;
      return string(out.s);
    }
    if (c == 't') { out.t = Json::T::Bool; out.b = true; return literal("true"); }
    if (c == 'f') { out.t = Json::T::Bool; out.b = false; return literal("false"); }
    if (c == 'n') { out.t = Json::T::Null; return literal("null"); }
    return number(out);
  }
  bool object(Json& out, int depth) {
    out.t = Json::T::Object;
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return true; }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return bad("expected a property name");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return bad("expected ':'");
      ++pos_;
      Json v;
      if (!value(v, depth + 1)) return false;
      // a repeated key keeps its last value, as Python's json does
      bool replaced = false;
      for (size_t k = 0; k < out.keys.size(); ++k)
        if (out.keys[k] == key) { out.arr[k] = std::move(v); replaced = true; break; }
      if (!replaced) { out.keys.push_back(std::move(key)); out.arr.push_back(std::move(v)); }
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return true; }
      return bad("expected ',' or '}'");
    }
  }
  bool array(Json& out, int depth) {
    out.t = Json::T::Array;
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return true; }
    for (;;) {
      Json v;
      if (!value(v, depth + 1)) return false;
      out.arr.push_back(std::move(v));
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return true; }
      return bad("expected ',' or ']'");
    }
  }
  bool hex4(uint32_t& v) {
    if (pos_ + 4 > s_.size()) return bad("truncated \\u escape");
    v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') v |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= uint32_t(h - 'A' + 10);
      else return bad("invalid \\u escape");
    }
    return true;
  }
  bool string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return bad("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return true; }
      if (c < 0x20) return bad("invalid control character in a string");
      if (c != '\\') {
        uint32_t cp;
        size_t p = pos_;
        if (!next_code_point(s_, p, cp)) return bad("invalid UTF-8");
        out.append(s_, pos_, p - pos_);
        pos_ = p;
        continue;
      }
      if (++pos_ >= s_.size()) return bad("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            const size_t save = pos_;
            pos_ += 2;
            uint32_t lo;
            if (!hex4(lo)) return false;
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else pos_ = save;
          }
          append_utf8(out, cp);
          break;
        }
        default: return bad("invalid escape");
      }
    }
  }
  bool number(Json& out) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    const size_t digits = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == digits) return bad("expecting value");
    bool is_float = false;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      const size_t frac = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == frac) return bad("invalid number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      const size_t exp = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == exp) return bad("invalid number");
    }
    const std::string text = s_.substr(start, pos_ - start);
    if (is_float) {
      out.t = Json::T::Float;
      // JSON numbers use '.', whatever the app's locale says
      std::istringstream is(text);
      is.imbue(std::locale::classic());
      is >> out.f;
      if (is.fail()) out.f = text[0] == '-' ? -std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::infinity();  // out of range, as Python
      return true;
    }
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE) return bad("integer out of range");
    out.t = Json::T::Int;
    out.i = int64_t(v);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

// Python's repr of a JSON value as json.loads returns it, for messages.
std::string json_repr(const Json& j) {
  switch (j.t) {
    case Json::T::Null: return "None";
    case Json::T::Bool: return j.b ? "True" : "False";
    case Json::T::Int: return std::to_string(j.i);
    case Json::T::Float: return optim::py_float_repr(j.f);
    case Json::T::String: return py_str_repr(j.s);
    case Json::T::Array: {
      std::string out = "[";
      for (size_t k = 0; k < j.arr.size(); ++k) out += (k ? ", " : "") + json_repr(j.arr[k]);
      return out + "]";
    }
    case Json::T::Object: {
      std::string out = "{";
      for (size_t k = 0; k < j.arr.size(); ++k) out += (k ? ", " : "") + py_str_repr(j.keys[k]) + ": " + json_repr(j.arr[k]);
      return out + "}";
    }
  }
  return "?";
}

// json.dumps(v) as Python writes it (", " and ": " separators).
std::string json_dumps(const Json& j) {
  std::string out;
  switch (j.t) {
    case Json::T::Null: return "null";
    case Json::T::Bool: return j.b ? "true" : "false";
    case Json::T::Int: return std::to_string(j.i);
    case Json::T::Float: return optim::py_float_repr(j.f);
    case Json::T::String: write_json_string(out, j.s); return out;
    case Json::T::Array:
      out = "[";
      for (size_t k = 0; k < j.arr.size(); ++k) out += (k ? ", " : "") + json_dumps(j.arr[k]);
      return out + "]";
    case Json::T::Object:
      out = "{";
      for (size_t k = 0; k < j.arr.size(); ++k) {
        if (k) out += ", ";
        write_json_string(out, j.keys[k]);
        out += ": " + json_dumps(j.arr[k]);
      }
      return out + "}";
  }
  return out;
}

// Python's repr of a bytes object, for the bad-magic message.
std::string bytes_repr(const std::string& b) {
  std::string out = "b'";
  char buf[8];
  for (unsigned char c : b) {
    if (c == '\\' || c == '\'') { out += '\\'; out += char(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) { std::snprintf(buf, sizeof buf, "\\x%02x", c); out += buf; }
    else out += char(c);
  }
  return out + "'";
}

// ---------------------------------------------------------------- encoding
class Encoder {
 public:
  struct Entry {
    Tensor tensor;
    int64_t offset, nbytes;
  };
  std::vector<Entry> tensors;
  int64_t size = 0;
  std::string header_tensors = "[";

  void value(std::string& out, const Value& v, const std::string& where) {
    using K = Value::Kind;
    switch (v.kind()) {
      case K::None: out += "null"; return;
      case K::Bool: out += v.boolean() ? "true" : "false"; return;
      case K::Int: out += std::to_string(v.integer()); return;
      case K::Float: {
        const double f = v.number();
        if (std::isfinite(f)) out += optim::py_float_repr(f);
        else out += std::string("{\"t\":\"float\",\"v\":\"") + (std::isnan(f) ? "nan" : f > 0 ? "inf" : "-inf") + "\"}";
        return;
      }
      case K::String:
        if (!write_json_string(out, v.string()))
          fail<TypeError>("cannot save ", where, ": a string that is not valid UTF-8");
        return;
      case K::Tensor: out += "{\"t\":\"tensor\",\"i\":" + std::to_string(tensor(v.tensor(), where)) + "}"; return;
      case K::DType: out += std::string("{\"t\":\"dtype\",\"v\":\"") + dtype_name(v.dtype()) + "\"}"; return;
      case K::Device: out += "{\"t\":\"device\",\"v\":\"" + v.device().str() + "\"}"; return;
      case K::List:
      case K::Tuple: {
        const bool tuple = v.kind() == K::Tuple;
        out += tuple ? "{\"t\":\"tuple\",\"v\":[" : "[";
        const auto& e = v.elements();
        for (size_t k = 0; k < e.size(); ++k) {
          if (k) out += ',';
          value(out, e[k], where + "[" + std::to_string(k) + "]");
        }
        out += tuple ? "]}" : "]";
        return;
      }
      case K::Dict: {
        out += v.ordered() ? "{\"t\":\"odict\",\"v\":[" : "{\"t\":\"dict\",\"v\":[";
        bool first = true;
        for (const auto& [key, x] : v.items()) {
          out += first ? "[" : ",[";
          first = false;
          check_key(key, "a key of " + where);
          value(out, key, "a key of " + where);
          out += ',';
          value(out, x, where + "[" + key.repr() + "]");
          out += ']';
        }
        out += "]}";
        return;
      }
    }
  }

 private:
  void check_key(const Value& k, const std::string& where) {
    using K = Value::Kind;
    if (k.kind() == K::Tensor || k.kind() == K::List || k.kind() == K::Dict)
      fail<TypeError>("cannot save ", where, ": dict key of type ", k.kind_name(), "; supported: ", kSupported);
    if (k.kind() == K::Tuple)
      for (const Value& e : k.elements()) check_key(e, where);
  }

  int64_t tensor(const Tensor& t, const std::string& where) {
    auto it = index_.find(t.impl());
    if (it != index_.end()) return it->second;
    if (t.is_symbolic()) fail<TypeError>("cannot save ", where, ": it is a traced (symbolic) tensor with no data");
    const int64_t nbytes = int64_t(t.nbytes());
    const int64_t k = int64_t(tensors.size());
    if (k) header_tensors += ',';
    header_tensors += std::string("{\"dtype\":\"") + dtype_name(t.dtype()) + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape().size(); ++d) header_tensors += (d ? "," : "") + std::to_string(t.shape()[d]);
    header_tensors += "],\"offset\":" + std::to_string(size) + ",\"nbytes\":" + std::to_string(nbytes) +
                      ",\"device\":\"" + t.device().str() + "\",\"requires_grad\":" +
                      (t.requires_grad() ? "true" : "false") + "}";
    tensors.push_back({t, size, nbytes});
    size = align_up(size + nbytes);
    index_.emplace(t.impl(), k);
    return k;
  }

  std::unordered_map<const TensorImpl*, int64_t> index_;
};

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail<Error>("cannot write ", path, ": ", std::strerror(errno));
    }
    p += w;
    n -= size_t(w);
  }
}

void write_zeros(int fd, int64_t n, const std::string& path) {
  static const char zeros[kAlign] = {};
  while (n > 0) {
    const int64_t k = std::min<int64_t>(n, kAlign);
    write_all(fd, zeros, size_t(k), path);
    n -= k;
  }
}

void put_u32(std::string& s, uint32_t v) {
  for (int k = 0; k < 4; ++k) s += char((v >> (8 * k)) & 0xff);
}
void put_u64(std::string& s, uint64_t v) {
  for (int k = 0; k < 8; ++k) s += char((v >> (8 * k)) & 0xff);
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// ---------------------------------------------------------------- decoding
class Reader {
 public:
  Reader(const std::string& path, std::FILE* fh) : name_(path), fh_(fh) {}
  [[noreturn]] void fail(const std::string& problem) const { throw CheckpointError(name_ + ": " + problem); }
  const std::string& name() const { return name_; }
  std::string read(size_t n) {
    std::string out(n, '\0');
    const size_t got = n ? std::fread(&out[0], 1, n, fh_) : 0;
    out.resize(got);
    return out;
  }
  size_t read_at(int64_t pos, void* buf, size_t n) {
    if (std::fseek(fh_, long(pos), SEEK_SET) != 0) return 0;
    return std::fread(buf, 1, n, fh_);
  }

 private:
  std::string name_;
  std::FILE* fh_;
};

struct TensorEntry {
  std::string dtype;
  Shape shape;
  int64_t offset = 0, nbytes = 0;
  std::string device = "cpu";
  bool requires_grad = false;
};

TensorEntry check_entry(const Reader& r, size_t k, const Json& e, int64_t data_size) {
  const std::string K = std::to_string(k);
  if (e.t != Json::T::Object) r.fail("tensor entry " + K + " is not an object");
  TensorEntry out;
  const Json* name = e.get("dtype");
  if (!name || name->t != Json::T::String || !storage_dtype(name->s)) {
    std::string known;
    for (const auto& [n, d] : storage_dtypes()) known += (known.empty() ? "" : ", ") + n;
    r.fail("tensor " + K + " has unknown dtype " + (name ? json_repr(*name) : "None") + " (known: " + known + ")");
  }
  out.dtype = name->s;
  const Json* shape = e.get("shape");
  bool shape_ok = shape && shape->t == Json::T::Array;
  for (size_t d = 0; shape_ok && d < shape->arr.size(); ++d)
    shape_ok = shape->arr[d].is_int() && shape->arr[d].i >= 0;
  if (!shape_ok) r.fail("tensor " + K + " has an invalid shape " + (shape ? json_repr(*shape) : "None"));
  for (const Json& d : shape->arr) out.shape.push_back(d.i);
  const Json* offset = e.get("offset");
  const Json* nbytes = e.get("nbytes");
  if (!(offset && nbytes && offset->is_int() && nbytes->is_int()) || offset->i < 0)
    r.fail("tensor " + K + " has an invalid offset/nbytes (" + (offset ? json_repr(*offset) : "None") + ", " +
           (nbytes ? json_repr(*nbytes) : "None") + ")");
  out.offset = offset->i;
  out.nbytes = nbytes->i;
  // the element count in overflow-safe arithmetic (a damaged shape may be huge)
  long double expected = itemsize(*storage_dtype(out.dtype));
  for (int64_t d : out.shape) expected *= (long double)d;
  if ((long double)out.nbytes != expected) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0Lf", expected);
    r.fail("tensor " + K + ": nbytes " + std::to_string(out.nbytes) + " does not match shape " +
           json_repr(*shape) + " of " + out.dtype + " (" + buf + " bytes)");
  }
  if (out.offset + out.nbytes > data_size)
    r.fail("tensor " + K + ": bytes [" + std::to_string(out.offset) + ", " + std::to_string(out.offset + out.nbytes) +
           ") lie outside the data section of " + std::to_string(data_size) + " bytes");
  if (const Json* dev = e.get("device")) {
    bool ok = dev->t == Json::T::String;
    if (ok) {
      try {
        parse_device(dev->s);
      } catch (const lucid::Error&) {
        ok = false;
      }
    }
    if (!ok) r.fail("tensor " + K + " has an invalid device " + json_repr(*dev));
    out.device = dev->s;
  }
  if (const Json* rg = e.get("requires_grad")) out.requires_grad = rg->t == Json::T::Bool ? rg->b : rg->is_int() && rg->i;
  return out;
}

Tensor read_tensor(Reader& r, const TensorEntry& e, int64_t data_start, const std::optional<Device>& map_location) {
  const DType dtype = *storage_dtype(e.dtype);
  Tensor t = Tensor::empty(e.shape, dtype, Device{});
  if (e.nbytes) {
    const size_t got = r.read_at(data_start + e.offset, t.raw_data(), size_t(e.nbytes));
    if (int64_t(got) != e.nbytes)
      r.fail("truncated file: a " + e.dtype + " tensor needs " + std::to_string(e.nbytes) + " bytes at data offset " +
             std::to_string(e.offset) + ", only " + std::to_string(got) + " present");
  }
  if (dtype == DType::Bool) {
    const auto* b = static_cast<const unsigned char*>(t.raw_data());
    for (int64_t k = 0; k < e.nbytes; ++k)
      if (b[k] > 1) r.fail("a bool tensor holds bytes other than 0 and 1");
  }
  const Device target = map_location ? *map_location : parse_device(e.device);
  if (target != t.device()) {
    if (!device_available(target.type))
      lucid::fail<Error>(r.name(), ": a tensor was saved on device '", e.device,
                         "', which is not available here; pass map_location='cpu' to load it on the CPU");
    t = to_device(t, target);
  }
  if (e.requires_grad && is_floating(dtype)) t.set_requires_grad(true);
  return t;
}

Value decode(const Reader& r, const Json& v, const std::vector<Tensor>& tensors) {
  switch (v.t) {
    case Json::T::Null: return Value();
    case Json::T::Bool: return Value(v.b);
    case Json::T::Int: return Value(v.i);
    case Json::T::Float: return Value(v.f);
    case Json::T::String: return Value(v.s);
    case Json::T::Array: {
      std::vector<Value> out;
      for (const Json& x : v.arr) out.push_back(decode(r, x, tensors));
      return Value::list(std::move(out));
    }
    case Json::T::Object: break;
  }
  const Json* tag = v.get("t");
  const std::string t = tag && tag->t == Json::T::String ? tag->s : "";
  if (t == "tensor") {
    const Json* k = v.get("i");
    if (!k || !k->is_int() || k->i < 0 || k->i >= int64_t(tensors.size()))
      r.fail("reference to tensor " + (k ? json_repr(*k) : "None") + ", but the file has " +
             std::to_string(tensors.size()) + " tensors");
    return Value(tensors[size_t(k->i)]);
  }
  const Json* body = v.get("v");
  if (t == "tuple" && body && body->t == Json::T::Array) {
    std::vector<Value> out;
    for (const Json& x : body->arr) out.push_back(decode(r, x, tensors));
    return Value::tuple(std::move(out));
  }
  if ((t == "dict" || t == "odict") && body && body->t == Json::T::Array) {
    Value out = Value::dict({}, t == "odict");  // an odict's "meta" (_metadata) is not kept
    for (const Json& item : body->arr) {
      if (item.t != Json::T::Array || item.arr.size() != 2) r.fail("malformed dict item " + json_repr(item));
      Value key = decode(r, item.arr[0], tensors);
      if (key.kind() == Value::Kind::List || key.kind() == Value::Kind::Dict)
        r.fail("unhashable dict key " + key.repr());
      out.set(std::move(key), decode(r, item.arr[1], tensors));
    }
    return out;
  }
  if (t == "float" && body && body->t == Json::T::String &&
      (body->s == "nan" || body->s == "inf" || body->s == "-inf")) {
    const double inf = std::numeric_limits<double>::infinity();
    return Value(body->s == "nan" ? std::numeric_limits<double>::quiet_NaN() : body->s == "inf" ? inf : -inf);
  }
  if (t == "dtype" && body && body->t == Json::T::String) {
    const auto d = storage_dtype(body->s);
    if (!d) r.fail("unknown dtype " + py_str_repr(body->s));
    return Value(*d);
  }
  if (t == "device" && body && body->t == Json::T::String) {
    try {
      return Value(parse_device(body->s));
    } catch (const lucid::Error& exc) {
      r.fail("invalid device " + py_str_repr(body->s) + ": " + exc.what());
    }
  }
  r.fail("unknown or malformed tagged value " + json_dumps(v).substr(0, 200));
}

}  // namespace

// ================================================================ save/load
void save(const Value& obj, const std::string& path) {
  require_little_endian();
  Encoder enc;
  std::string root;
  enc.value(root, obj, "obj");  // every type error surfaces before any byte is written
  const std::string header = "{\"format\":\"lucid\",\"data_size\":" + std::to_string(enc.size) +
                             ",\"tensors\":" + enc.header_tensors + "],\"root\":" + root + "}";
  std::string prefix(kMagic, sizeof kMagic);
  put_u32(prefix, kVersion);
  put_u64(prefix, header.size());

  const size_t slash = path.find_last_of('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail<Error>("cannot save to ", path, ": directory ", directory, " does not exist");
  std::string tmp = directory + "/." + base + ".XXXXXX.tmp";
  int fd = ::mkstemps(&tmp[0], 4);
  if (fd < 0) fail<Error>("cannot save to ", path, ": ", std::strerror(errno));
  try {
    write_all(fd, prefix.data(), prefix.size(), path);
    write_all(fd, header.data(), header.size(), path);
    const int64_t pos = int64_t(prefix.size() + header.size());
    write_zeros(fd, align_up(pos) - pos, path);
    int64_t at = 0;
    for (const auto& e : enc.tensors) {
      write_zeros(fd, e.offset - at, path);
      Tensor t = e.tensor.detach();
      if (t.device().type != DeviceType::CPU) t = to_device(t, Device{});
      if (e.nbytes) write_all(fd, t.raw_data("saving"), size_t(e.nbytes), path);
      at = e.offset + e.nbytes;
    }
    write_zeros(fd, enc.size - at, path);
    if (::fsync(fd) != 0) fail<Error>("cannot write ", path, ": ", std::strerror(errno));
    // mkstemp makes the file private; give it the mode a plain open() would
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail<Error>("cannot write ", path, ": ", std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail<Error>("cannot save to ", path, ": ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

Value load(const std::string& path, std::optional<Device> map_location) {
  require_little_endian();
  std::FILE* fh = std::fopen(path.c_str(), "rb");
  if (!fh) fail<Error>("cannot open ", path, ": ", std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{fh};
  struct stat st;
  if (::fstat(::fileno(fh), &st) != 0) fail<Error>("cannot read ", path, ": ", std::strerror(errno));
  const int64_t size = int64_t(st.st_size);
  Reader r(path, fh);

  const std::string prefix = r.read(kPrefix);
  if (prefix.compare(0, 2, "PK") == 0 || (!prefix.empty() && static_cast<unsigned char>(prefix[0]) == 0x80))
    r.fail("not a Lucid checkpoint: this looks like a pickle/zip file (e.g. from torch.save); Lucid reads only its "
           "own format");
  const std::string magic(kMagic, sizeof kMagic);
  if (prefix.size() < magic.size() || prefix.compare(0, magic.size(), magic) != 0) {
    if (prefix.size() < magic.size() && magic.compare(0, prefix.size(), prefix) == 0)
      r.fail("truncated file: " + std::to_string(prefix.size()) + " bytes, not even a header");
    r.fail("not a Lucid checkpoint (bad magic " + bytes_repr(prefix.substr(0, 8)) + ", expected " + bytes_repr(magic) +
           ")");
  }
  if (prefix.size() < kPrefix) r.fail("truncated file: " + std::to_string(prefix.size()) + " bytes, not even a header");
  const auto* p = reinterpret_cast<const unsigned char*>(prefix.data());
  const uint32_t version = get_u32(p + 8);
  const uint64_t header_len = get_u64(p + 12);
  if (version != kVersion)
    r.fail("unsupported format version " + std::to_string(version) + " (this Lucid reads version " +
           std::to_string(kVersion) + ")");
  if (header_len > uint64_t(size) || int64_t(kPrefix + header_len) > size)
    r.fail("truncated file: header of " + std::to_string(header_len) + " bytes announced, file has " +
           std::to_string(size) + " bytes");
  const std::string raw = r.read(size_t(header_len));
  if (raw.size() != header_len)
    r.fail("truncated file: the header needs " + std::to_string(header_len) + " bytes, only " +
           std::to_string(raw.size()) + " left");
  Json header;
  JsonParser parser(raw);
  if (!parser.parse(header)) r.fail("corrupt header (" + parser.error() + ")");
  const Json* format = header.get("format");
  const Json* root = header.get("root");
  if (header.t != Json::T::Object || !format || format->t != Json::T::String || format->s != "lucid" || !root)
    r.fail("corrupt header: missing 'format', 'data_size', 'tensors' or 'root'");
  const Json* data_size = header.get("data_size");
  const Json* entries = header.get("tensors");
  if (!data_size || !data_size->is_int() || data_size->i < 0 || !entries || entries->t != Json::T::Array)
    r.fail("corrupt header: invalid 'data_size' or 'tensors'");
  const int64_t data_start = align_up(int64_t(kPrefix + header_len));
  const int64_t expected = data_start + data_size->i;
  if (size < expected)
    r.fail("truncated file: expected " + std::to_string(expected) + " bytes, found " + std::to_string(size));
  if (size > expected) r.fail(std::to_string(size - expected) + " unexpected bytes after the end of the data");
  std::vector<TensorEntry> checked;
  for (size_t k = 0; k < entries->arr.size(); ++k) checked.push_back(check_entry(r, k, entries->arr[k], data_size->i));
  std::vector<Tensor> tensors;
  for (const auto& e : checked) tensors.push_back(read_tensor(r, e, data_start, map_location));
  return decode(r, *root, tensors);
}

}  // namespace lucid
