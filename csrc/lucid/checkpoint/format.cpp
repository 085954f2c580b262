#include "lucid/checkpoint/format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lucid/checkpoint/crc32c.h"
#include "lucid/checkpoint/json.h"
#include "lucid/ops/ops.h"

namespace lucid::checkpoint {
namespace {

constexpr char kMagic[8] = {'L', 'U', 'C', 'I', 'D', 'C', 'K', 'P'};
constexpr int64_t kAlign = 64;
constexpr const char* kSupportedKeys = "supported: None, bool, int, float, str, dtypes, devices and tuples of them";

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
size_t prefix_size(uint32_t version) { return version == 1 ? 20 : 24; }

void put_u32(std::string& s, uint32_t v) {
  for (int k = 0; k < 4; ++k) s += char((v >> (8 * k)) & 0xff);
}
void put_u64(std::string& s, uint64_t v) {
  for (int k = 0; k < 8; ++k) s += char((v >> (8 * k)) & 0xff);
}
uint64_t get_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

const std::vector<DType>& tensor_dtypes() {
  static const std::vector<DType> t = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::Int16,
                                       DType::Int32,   DType::Int64,    DType::Float16, DType::BFloat16,
                                       DType::Float32, DType::Float64};
  return t;
}

std::optional<DType> tensor_dtype(const std::string& name) {
  for (DType d : tensor_dtypes())
    if (name == dtype_name(d)) return d;
  return std::nullopt;
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

// ================================================================ writing
// One block of the data section: its bytes (kept alive by `owner`) and its
// header entry.
struct Block {
  Json entry;
  const void* data = nullptr;
  int64_t nbytes = 0;
  Tensor owner_tensor;
  std::shared_ptr<const void> owner;
};

class Encoder {
 public:
  std::vector<Block> blocks;
  int64_t size = 0;  // of the data section so far

  Json value(const Value& v, const std::string& where, int depth) {
    using K = Value::Kind;
    switch (v.kind()) {
      case K::None: return Json(nullptr);
      case K::Bool: return Json(v.boolean());
      case K::Int: return Json(v.integer());
      case K::BigInt: return tagged("int", Json(v.big_integer()));
      case K::Float: {
        const double f = v.number();
        if (std::isfinite(f)) return Json(f);
        return tagged("float", Json(std::isnan(f) ? "nan" : f > 0 ? "inf" : "-inf"));
      }
      case K::String: return Json(v.string());
      case K::DType: return tagged("dtype", Json(dtype_name(v.dtype())));
      case K::Device: return tagged("device", Json(v.device().str()));
      case K::Tensor: return ref("tensor", tensor(v, where));
      case K::Array: return ref("ndarray", array(v));
      case K::Pickled: {
        Json out = ref("pickle", pickle(v));
        Json refs = Json::array();
        const auto& p = v.pickled();
        for (size_t k = 0; k < p.refs.size(); ++k)
          refs.push_back(value(p.refs[k], where + " (pickled object's reference " + std::to_string(k) + ")", depth));
        out["refs"] = std::move(refs);
        return out;
      }
      case K::List:
      case K::Tuple:
      case K::Dict: break;
    }
    if (depth >= kMaxNesting)
      fail<InvalidArgument>("cannot save ", where, ": containers nested more than ", kMaxNesting, " levels deep");
    if (v.kind() != K::Dict) {
      Json elements = Json::array();
      const auto& e = v.elements();
      for (size_t k = 0; k < e.size(); ++k)
        elements.push_back(value(e[k], where + "[" + std::to_string(k) + "]", depth + 1));
      return v.kind() == K::List ? elements : tagged("tuple", std::move(elements));
    }
    Json items = Json::array();
    for (const auto& [key, x] : v.items()) {
      check_key(key, where);
      Json item = Json::array();
      item.push_back(value(key, "a key of " + where, depth + 1));
      item.push_back(value(x, where + "[" + key.repr() + "]", depth + 1));
      items.push_back(std::move(item));
    }
    Json out = tagged(v.ordered() ? "odict" : "dict", std::move(items));
    if (const Value* meta = v.metadata()) out["meta"] = value(*meta, where + "._metadata", depth + 1);
    return out;
  }

 private:
  std::unordered_map<const void*, int64_t> index_;  // identity -> entry

  static Json tagged(const char* tag, Json body) {
    Json out = Json::object();
    out["t"] = tag;
    out["v"] = std::move(body);
    return out;
  }
  static Json ref(const char* tag, int64_t k) {
    Json out = Json::object();
    out["t"] = tag;
    out["i"] = k;
    return out;
  }

  static void check_key(const Value& key, const std::string& where) {
    using K = Value::Kind;
    switch (key.kind()) {
      case K::Tuple:
        for (const Value& e : key.elements()) check_key(e, where);
        return;
      case K::List:
      case K::Dict:
      case K::Tensor:
      case K::Array:
      case K::Pickled:
        fail<TypeError>("cannot save a key of ", where, ": dict key of type ", key.kind_name(), "; ", kSupportedKeys);
      default: return;
    }
  }

  int64_t add(Block b) {
    b.entry["offset"] = size;
    b.entry["nbytes"] = b.nbytes;
    b.entry["crc32c"] = crc32c(b.data, size_t(b.nbytes));
    size = align_up(size + b.nbytes);
    blocks.push_back(std::move(b));
    return int64_t(blocks.size()) - 1;
  }

  static Json shape_json(const Shape& shape) {
    Json s = Json::array();
    for (int64_t d : shape) s.push_back(d);
    return s;
  }

  int64_t tensor(const Value& v, const std::string& where) {
    const Tensor& t = v.tensor();
    if (auto it = index_.find(v.identity()); it != index_.end()) return it->second;
    if (t.is_symbolic()) fail<TypeError>("cannot save ", where, ": it is a traced (symbolic) tensor with no data");
    Block b;
    b.owner_tensor = host_contiguous(t);
    b.nbytes = int64_t(b.owner_tensor.nbytes());
    b.data = b.nbytes ? b.owner_tensor.raw_data("saving") : nullptr;
    b.entry["dtype"] = dtype_name(t.dtype());
    b.entry["shape"] = shape_json(t.shape());
    b.entry["device"] = t.device().str();
    b.entry["requires_grad"] = t.requires_grad();
    if (v.is_parameter()) b.entry["parameter"] = true;
    const int64_t k = add(std::move(b));
    index_.emplace(v.identity(), k);
    return k;
  }

  int64_t array(const Value& v) {
    if (auto it = index_.find(v.identity()); it != index_.end()) return it->second;
    const Array& a = v.array();
    Block b;
    b.entry["kind"] = "ndarray";
    b.entry["dtype"] = a.dtype;
    b.entry["shape"] = shape_json(a.shape);
    if (a.scalar) b.entry["scalar"] = true;
    b.owner = a.data;
    b.data = a.data.get();
    b.nbytes = a.nbytes();
    const int64_t k = add(std::move(b));
    index_.emplace(v.identity(), k);
    return k;
  }

  int64_t pickle(const Value& v) {
    if (auto it = index_.find(v.identity()); it != index_.end()) return it->second;
    const Pickled& p = v.pickled();
    Block b;
    b.entry["kind"] = "pickle";
    b.entry["dtype"] = "uint8";
    b.entry["shape"] = shape_json({int64_t(p.bytes.size())});
    b.owner = std::shared_ptr<const void>(std::make_shared<Value>(v), p.bytes.data());
    b.data = p.bytes.data();
    b.nbytes = int64_t(p.bytes.size());
    const int64_t k = add(std::move(b));
    index_.emplace(v.identity(), k);
    return k;
  }
};

void write_zeros(const Sink& sink, int64_t n) {
  static const char zeros[kAlign] = {};
  while (n > 0) {
    const int64_t k = std::min<int64_t>(n, kAlign);
    sink(zeros, size_t(k));
    n -= k;
  }
}

// ================================================================ reading
class Reader {
 public:
  Reader(Source& src, std::string name) : src_(src), name_(std::move(name)) {}
  [[noreturn]] void fail(const std::string& problem) const { throw CheckpointError(name_ + ": " + problem); }
  const std::string& name() const { return name_; }
  Source& source() { return src_; }
  std::string read(int64_t pos, size_t n) {
    std::string out(n, '\0');
    out.resize(n ? src_.read_at(pos, &out[0], n) : 0);
    return out;
  }

 private:
  Source& src_;
  std::string name_;
};

enum class EntryKind : uint8_t { Tensor, NdArray, Pickle };

struct Entry {
  EntryKind kind = EntryKind::Tensor;
  std::string dtype;
  Shape shape;
  int64_t offset = 0, nbytes = 0;
  std::optional<uint32_t> crc;
  std::string device = "cpu";
  bool requires_grad = false, parameter = false, scalar = false;
  Value loaded;  // what the entry became
};

const char* kind_tag(EntryKind k) { return k == EntryKind::Tensor ? "tensor" : k == EntryKind::NdArray ? "ndarray" : "pickle"; }

bool is_int(const Json* j) { return j && j->is_number_integer(); }

std::string known_tensor_dtypes() {
  std::string known;
  for (DType d : tensor_dtypes()) known += (known.empty() ? "" : ", ") + std::string(dtype_name(d));
  return known;
}

Entry check_entry(const Reader& r, size_t k, const Json& e, int64_t data_size, bool checksums) {
  const std::string K = std::to_string(k);
  if (!e.is_object()) r.fail("tensor entry " + K + " is not an object");
  const auto get = [&](const char* key) -> const Json* {
    auto it = e.find(key);
    return it == e.end() ? nullptr : &*it;
  };
  Entry out;
  if (const Json* kind = get("kind")) {
    if (*kind == "ndarray") out.kind = EntryKind::NdArray;
    else if (*kind == "pickle") out.kind = EntryKind::Pickle;
    else r.fail("entry " + K + " has an unknown kind " + json_repr(*kind));
  }
  const Json* name = get("dtype");
  const bool name_ok = name && name->is_string();
  size_t item = 0;
  if (name_ok) {
    out.dtype = name->get<std::string>();
    if (out.kind == EntryKind::Tensor) item = tensor_dtype(out.dtype) ? itemsize(*tensor_dtype(out.dtype)) : 0;
    else if (out.kind == EntryKind::NdArray) item = array_itemsize(out.dtype);
    else item = out.dtype == "uint8" ? 1 : 0;
  }
  if (!item) {
    const std::string known = out.kind == EntryKind::Tensor    ? known_tensor_dtypes()
                              : out.kind == EntryKind::NdArray ? "NumPy's bool, int8..int64, uint8..uint64, "
                                                                 "float16/32/64, complex64/128"
                                                               : "uint8";
    r.fail("tensor " + K + " has unknown dtype " + (name ? json_repr(*name) : "None") + " (known: " + known + ")");
  }
  const Json* shape = get("shape");
  bool shape_ok = shape && shape->is_array() && shape->size() <= size_t(kMaxDims);
  // The size in bytes with zero dims counted as one must fit in int64 (the
  // strides of a tensor of that shape), as NumPy requires.
  int64_t span = int64_t(item), numel = 1;
  for (size_t d = 0; shape_ok && d < shape->size(); ++d) {
    const Json& dim = (*shape)[d];
    shape_ok = dim.is_number_integer() && dim.get<int64_t>() >= 0;
    if (!shape_ok) break;
    const int64_t n = dim.get<int64_t>();
    shape_ok = !__builtin_mul_overflow(span, std::max<int64_t>(n, 1), &span);
    numel *= n;  // cannot overflow: |numel| <= span
    out.shape.push_back(n);
  }
  if (!shape_ok)
    r.fail("tensor " + K + " has an invalid shape " + (shape ? json_repr(*shape).substr(0, 300) : "None") +
           " (at most " + std::to_string(kMaxDims) + " sizes >= 0 whose product in bytes fits in 64 bits)");
  const Json* offset = get("offset");
  const Json* nbytes = get("nbytes");
  if (!is_int(offset) || !is_int(nbytes) || offset->get<int64_t>() < 0)
    r.fail("tensor " + K + " has an invalid offset/nbytes (" + (offset ? json_repr(*offset) : "None") + ", " +
           (nbytes ? json_repr(*nbytes) : "None") + ")");
  out.offset = offset->get<int64_t>();
  out.nbytes = nbytes->get<int64_t>();
  const int64_t expected = numel * int64_t(item);
  if (out.nbytes != expected)
    r.fail("tensor " + K + ": nbytes " + std::to_string(out.nbytes) + " does not match shape " + json_repr(*shape) +
           " of " + out.dtype + " (" + std::to_string(expected) + " bytes)");
  if (out.offset > data_size || out.nbytes > data_size - out.offset)
    r.fail("tensor " + K + ": bytes [" + std::to_string(out.offset) + ", " +
           std::to_string(uint64_t(out.offset) + uint64_t(out.nbytes)) + ") lie outside the data section of " +
           std::to_string(data_size) + " bytes");
  if (const Json* crc = get("crc32c")) {
    if (!crc->is_number_unsigned() && !(crc->is_number_integer() && crc->get<int64_t>() >= 0))
      r.fail("tensor " + K + " has an invalid checksum " + json_repr(*crc));
    const uint64_t c = crc->get<uint64_t>();
    if (c > 0xffffffffu) r.fail("tensor " + K + " has an invalid checksum " + json_repr(*crc));
    out.crc = uint32_t(c);
  } else if (checksums) {
    r.fail("tensor " + K + " has no checksum");
  }
  const auto flag = [&](const char* key, bool& dst) {
    if (const Json* f = get(key)) {
      if (!f->is_boolean()) r.fail("tensor " + K + " has an invalid '" + key + "' " + json_repr(*f));
      dst = f->get<bool>();
    }
  };
  if (out.kind == EntryKind::Tensor) {
    if (const Json* dev = get("device")) {
      bool ok = dev->is_string();
      if (ok) {
        try {
          parse_device(dev->get<std::string>());
        } catch (const lucid::Error&) {
          ok = false;
        }
      }
      if (!ok) r.fail("tensor " + K + " has an invalid device " + json_repr(*dev));
      out.device = dev->get<std::string>();
    }
    if (const Json* rg = get("requires_grad")) {
      // version 1 writers put a bool; anything else is damage
      if (!rg->is_boolean()) r.fail("tensor " + K + " has an invalid 'requires_grad' " + json_repr(*rg));
      out.requires_grad = rg->get<bool>();
    }
    flag("parameter", out.parameter);
  } else if (out.kind == EntryKind::NdArray) {
    flag("scalar", out.scalar);
    if (out.scalar && !out.shape.empty()) r.fail("tensor " + K + " is a NumPy scalar with a shape");
  } else if (out.shape.size() != 1) {
    r.fail("tensor " + K + ": pickled bytes have a 1-d shape");
  }
  return out;
}

// Where entry k is referenced from the root, as Python would index it
// ("obj['model']['0.weight']"), for messages about damaged data.
bool find_ref(const Json& v, int64_t k, std::string& path) {
  if (v.is_array()) {
    for (size_t n = 0; n < v.size(); ++n) {
      const size_t len = path.size();
      path += "[" + std::to_string(n) + "]";
      if (find_ref(v[n], k, path)) return true;
      path.resize(len);
    }
    return false;
  }
  if (!v.is_object()) return false;
  auto t = v.find("t");
  auto i = v.find("i");
  if (t != v.end() && i != v.end() && i->is_number_integer() && i->get<int64_t>() == k) return true;
  auto body = v.find("v");
  if (t != v.end() && (*t == "dict" || *t == "odict") && body != v.end() && body->is_array()) {
    for (const Json& item : *body) {
      if (!item.is_array() || item.size() != 2) continue;
      const size_t len = path.size();
      path += "[" + (item[0].is_object() ? std::string("...") : json_repr(item[0])) + "]";
      if (find_ref(item[1], k, path)) return true;
      path.resize(len);
    }
    return false;
  }
  if (t != v.end() && *t == "tuple" && body != v.end()) return find_ref(*body, k, path);
  if (auto refs = v.find("refs"); refs != v.end() && refs->is_array()) {
    for (const Json& x : *refs)
      if (find_ref(x, k, path)) return (path += " (inside a pickled object)"), true;
  }
  return false;
}

std::string describe_entry(const Json& root, int64_t k, EntryKind kind) {
  std::string path = "obj";
  const std::string what = kind == EntryKind::Pickle ? "pickled object" : kind_tag(kind);
  if (find_ref(root, k, path)) return what + " " + path + " (entry " + std::to_string(k) + ")";
  return what + " entry " + std::to_string(k);
}

// Verifies that bytes [from, to) of the data section are zero (version 2
// pads with zeros; anything else there is damage).
void check_zeros(Reader& r, int64_t data_start, int64_t from, int64_t to) {
  char buf[4096];
  while (from < to) {
    const size_t n = size_t(std::min<int64_t>(to - from, sizeof buf));
    const size_t got = r.source().read_at(data_start + from, buf, n);
    if (got != n) r.fail("truncated file: the data section ends early");
    for (size_t k = 0; k < n; ++k)
      if (buf[k]) r.fail("damaged file: byte " + std::to_string(data_start + from + int64_t(k)) +
                         " lies between entries and should be zero");
    from += int64_t(n);
  }
}

void read_entry(Reader& r, Entry& e, int64_t data_start, const Json& root, int64_t k, const LoadOptions& options) {
  std::shared_ptr<uint8_t> buffer;  // ndarray / pickle bytes
  Tensor t;
  void* dst = nullptr;
  if (e.kind == EntryKind::Tensor) {
    t = Tensor::empty(e.shape, *tensor_dtype(e.dtype), Device{});
    dst = e.nbytes ? t.raw_data() : nullptr;
  } else if (e.nbytes) {
    buffer = std::shared_ptr<uint8_t>(new uint8_t[size_t(e.nbytes)], std::default_delete<uint8_t[]>());
    dst = buffer.get();
  }
  if (e.nbytes) {
    const size_t got = r.source().read_at(data_start + e.offset, dst, size_t(e.nbytes));
    if (int64_t(got) != e.nbytes)
      r.fail("truncated file: a " + e.dtype + " tensor needs " + std::to_string(e.nbytes) + " bytes at data offset " +
             std::to_string(e.offset) + ", only " + std::to_string(got) + " present");
  }
  if (e.crc && crc32c(dst, size_t(e.nbytes)) != *e.crc)
    r.fail("damaged file: the checksum of " + describe_entry(root, k, e.kind) + " does not match its bytes");
  if (e.dtype == "bool") {
    const auto* b = static_cast<const unsigned char*>(dst);
    for (int64_t n = 0; n < e.nbytes; ++n)
      if (b[n] > 1) r.fail("a bool tensor holds bytes other than 0 and 1");
  }
  if (e.kind == EntryKind::NdArray) {
    e.loaded = Value::array(Array{e.dtype, e.shape, e.scalar, buffer});
    return;
  }
  if (e.kind == EntryKind::Pickle) {
    e.loaded = Value::pickled(std::string(reinterpret_cast<const char*>(buffer.get()), size_t(e.nbytes)), {});
    return;
  }
  if (options.map_location) {
    t = options.map_location(t, e.device);
    LUCID_CHECK_T(TypeError, t.defined(), "map_location returned no tensor");
  } else {
    const Device target = parse_device(e.device);
    if (target != t.device()) {
      if (!device_available(target.type))
        lucid::fail<Error>(r.name(), ": a tensor was saved on device '", e.device,
                           "', which is not available here; pass map_location='cpu' to load it on the CPU");
      t = to_device(t, target);
    }
  }
  if (e.requires_grad && is_floating(t.dtype())) t.set_requires_grad(true);
  e.loaded = e.parameter ? Value::parameter(t) : Value(t);
}

bool valid_key(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::List:
    case Value::Kind::Dict:
    case Value::Kind::Tensor:
    case Value::Kind::Array:
    case Value::Kind::Pickled: return false;
    case Value::Kind::Tuple:
      for (const Value& e : key.elements())
        if (!valid_key(e)) return false;
      return true;
    default: return true;
  }
}

// Equal for keys a Python dict treats as one (1, 1.0 and True alike).
std::string key_signature(const Value& key) {
  using K = Value::Kind;
  switch (key.kind()) {
    case K::Bool:
    case K::Int: return "n" + std::to_string(key.kind() == K::Bool ? int64_t(key.boolean()) : key.integer());
    case K::Float: {
      const double f = key.number();
      if (f == std::floor(f) && std::fabs(f) < 9.2e18) return "n" + std::to_string(int64_t(f));
      return "f" + key.repr();
    }
    case K::BigInt: return "n" + key.big_integer();
    case K::String: return "s" + key.string();
    case K::Tuple: {
      std::string out = "(";
      for (const Value& e : key.elements()) {
        const std::string part = key_signature(e);
        out += std::to_string(part.size()) + ":" + part;
      }
      return out + ")";
    }
    default: return std::string(key.kind_name()) + ":" + key.repr();
  }
}

Value decode(const Reader& r, const Json& v, std::vector<Entry>& entries) {
  switch (v.type()) {
    case Json::value_t::null: return Value();
    case Json::value_t::boolean: return Value(v.get<bool>());
    case Json::value_t::number_integer: return Value(v.get<int64_t>());
    case Json::value_t::number_unsigned: return Value(int64_t(v.get<uint64_t>()));  // <= INT64_MAX (json.cpp)
    case Json::value_t::number_float: return Value(v.get<double>());
    case Json::value_t::string: return Value(v.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> out;
      out.reserve(v.size());
      for (const Json& x : v) out.push_back(decode(r, x, entries));
      return Value::list(std::move(out));
    }
    case Json::value_t::object: break;
    default: r.fail("unexpected value in the header");
  }
  auto tag_it = v.find("t");
  const std::string t = tag_it != v.end() && tag_it->is_string() ? tag_it->get<std::string>() : "";
  auto body_it = v.find("v");
  const Json* body = body_it == v.end() ? nullptr : &*body_it;
  if (t == "tensor" || t == "ndarray" || t == "pickle") {
    auto k_it = v.find("i");
    const Json* k = k_it == v.end() ? nullptr : &*k_it;
    if (!is_int(k) || k->get<int64_t>() < 0 || k->get<int64_t>() >= int64_t(entries.size()))
      r.fail("reference to tensor " + (k ? json_repr(*k) : "None") + ", but the file has " +
             std::to_string(entries.size()) + " tensors");
    Entry& e = entries[size_t(k->get<int64_t>())];
    if (t != kind_tag(e.kind))
      r.fail("a '" + t + "' reference to entry " + std::to_string(k->get<int64_t>()) + ", which holds a " +
             kind_tag(e.kind));
    if (e.kind != EntryKind::Pickle) return e.loaded;
    auto refs_it = v.find("refs");
    if (refs_it == v.end() || !refs_it->is_array()) r.fail("a pickled object without its 'refs'");
    std::vector<Value> refs;
    for (const Json& x : *refs_it) {
      Value ref = decode(r, x, entries);
      if (ref.kind() != Value::Kind::Tensor && ref.kind() != Value::Kind::Array)
        r.fail("a pickled object refers to a " + std::string(ref.kind_name()) + "; only tensors and arrays");
      refs.push_back(std::move(ref));
    }
    return Value::pickled(e.loaded.pickled().bytes, std::move(refs));
  }
  if (t == "tuple" && body && body->is_array()) {
    std::vector<Value> out;
    for (const Json& x : *body) out.push_back(decode(r, x, entries));
    return Value::tuple(std::move(out));
  }
  if ((t == "dict" || t == "odict") && body && body->is_array()) {
    Value out = Value::dict({}, t == "odict");
    Value::Items& items = out.items();
    items.reserve(body->size());
    std::unordered_map<std::string, size_t> position;  // key signature -> item
    for (const Json& item : *body) {
      if (!item.is_array() || item.size() != 2) r.fail("malformed dict item " + json_repr(item).substr(0, 200));
      Value key = decode(r, item[0], entries);
      if (!valid_key(key)) r.fail("unhashable dict key " + key.repr().substr(0, 200));
      Value x = decode(r, item[1], entries);
      // a repeated key keeps its first place and its last value, as in a Python dict
      auto [it, fresh] = position.emplace(key_signature(key), items.size());
      if (fresh) items.emplace_back(std::move(key), std::move(x));
      else items[it->second].second = std::move(x);
    }
    if (auto meta = v.find("meta"); meta != v.end()) {
      if (t != "odict") r.fail("a plain dict with '_metadata'");
      out.set_metadata(decode(r, *meta, entries));
    }
    return out;
  }
  if (t == "float" && body && body->is_string() && (*body == "nan" || *body == "inf" || *body == "-inf")) {
    const double inf = std::numeric_limits<double>::infinity();
    return Value(*body == "nan" ? std::numeric_limits<double>::quiet_NaN() : *body == "inf" ? inf : -inf);
  }
  if (t == "int" && body && body->is_string()) {
    try {
      return Value::big_integer(body->get<std::string>());
    } catch (const lucid::Error&) {
      r.fail("invalid integer " + json_repr(*body).substr(0, 200));
    }
  }
  if (t == "dtype" && body && body->is_string()) {
    const auto d = tensor_dtype(body->get<std::string>());
    if (!d) r.fail("unknown dtype " + py_str_repr(body->get<std::string>()));
    return Value(*d);
  }
  if (t == "device" && body && body->is_string()) {
    try {
      return Value(parse_device(body->get<std::string>()));
    } catch (const lucid::Error& exc) {
      r.fail("invalid device " + py_str_repr(body->get<std::string>()) + ": " + exc.what());
    }
  }
  r.fail("unknown or malformed tagged value " + dump_json(v).substr(0, 200));
}

// A row-major copy of a strided view, through lucid::contiguous where the
// core has it (tensors with strides); without strides every tensor already is.
template <class T>
auto row_major(const T& t, int) -> decltype(contiguous(t)) {
  return contiguous(t);
}
template <class T>
T row_major(const T& t, long) {
  return t;
}

}  // namespace

Tensor host_contiguous(const Tensor& t) {
  Tensor h = t.detach();
  if (h.device().type != DeviceType::CPU) h = to_device(h, Device{});
  return row_major(h, 0);
}

// ================================================================ save/load
void save(const Value& obj, const Sink& sink) {
  require_little_endian();
  Encoder enc;
  Json header = Json::object();
  header["format"] = "lucid";
  Json root = enc.value(obj, "obj", 0);  // every type error surfaces before any byte is written
  header["data_size"] = enc.size;
  Json entries = Json::array();
  for (const Block& b : enc.blocks) entries.push_back(b.entry);
  header["tensors"] = std::move(entries);
  header["root"] = std::move(root);
  const std::string text = dump_json(header);

  std::string prefix(kMagic, sizeof kMagic);
  put_u32(prefix, kFormatVersion);
  put_u64(prefix, text.size());
  put_u32(prefix, crc32c(text.data(), text.size()));
  sink(prefix.data(), prefix.size());
  sink(text.data(), text.size());
  const int64_t pos = int64_t(prefix.size() + text.size());
  write_zeros(sink, align_up(pos) - pos);
  int64_t at = 0;
  for (const Block& b : enc.blocks) {
    const int64_t offset = b.entry["offset"].get<int64_t>();
    write_zeros(sink, offset - at);
    if (b.nbytes) sink(b.data, size_t(b.nbytes));
    at = offset + b.nbytes;
  }
  write_zeros(sink, enc.size - at);
}

void save(const Value& obj, const std::string& path) {
  require_little_endian();
  write_atomically(path, [&](const Sink& sink) { save(obj, sink); });
}

Value load(const std::string& path, const LoadOptions& options) {
  FileSource src(path);
  return load(src, path, options);
}

Value load(Source& source, const std::string& name, const LoadOptions& options, int64_t* consumed) {
  require_little_endian();
  Reader r(source, name);
  const int64_t size = source.size();
  const std::string head = r.read(0, 24);
  if (head.compare(0, 2, "PK") == 0 || (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80))
    r.fail("not a Lucid checkpoint: this looks like a pickle/zip file (e.g. from torch.save); Lucid reads only its "
           "own format");
  const std::string magic(kMagic, sizeof kMagic);
  if (head.size() < magic.size() || head.compare(0, magic.size(), magic) != 0) {
    if (head.size() < magic.size() && magic.compare(0, head.size(), head) == 0)
      r.fail("truncated file: " + std::to_string(head.size()) + " bytes, not even a header");
    r.fail("not a Lucid checkpoint (bad magic " + bytes_repr(head.substr(0, 8)) + ", expected " + bytes_repr(magic) +
           ")");
  }
  if (head.size() < 20) r.fail("truncated file: " + std::to_string(head.size()) + " bytes, not even a header");
  const auto* p = reinterpret_cast<const unsigned char*>(head.data());
  const uint32_t version = uint32_t(get_le(p + 8, 4));
  if (version != 1 && version != 2)
    r.fail("unsupported format version " + std::to_string(version) + " (this Lucid reads versions 1 and 2)");
  const int64_t prefix = int64_t(prefix_size(version));
  if (int64_t(head.size()) < prefix)
    r.fail("truncated file: " + std::to_string(head.size()) + " bytes, not even a header");
  const uint64_t header_len = get_le(p + 12, 8);
  if (header_len > uint64_t(size - prefix))
    r.fail("truncated file: header of " + std::to_string(header_len) + " bytes announced, file has " +
           std::to_string(size) + " bytes");
  const std::string raw = r.read(prefix, size_t(header_len));
  if (raw.size() != header_len)
    r.fail("truncated file: the header needs " + std::to_string(header_len) + " bytes, only " +
           std::to_string(raw.size()) + " left");
  const bool checksums = version >= 2;
  if (checksums && crc32c(raw.data(), raw.size()) != uint32_t(get_le(p + 20, 4)))
    r.fail("damaged file: the header's checksum does not match its bytes");
  Json header;
  std::string error;
  if (!parse_json(raw, header, error)) r.fail("corrupt header (" + error + ")");
  const auto get = [&](const char* key) -> const Json* {
    if (!header.is_object()) return nullptr;
    auto it = header.find(key);
    return it == header.end() ? nullptr : &*it;
  };
  const Json* format = get("format");
  const Json* root = get("root");
  if (!format || *format != "lucid" || !root)
    r.fail("corrupt header: missing 'format', 'data_size', 'tensors' or 'root'");
  const Json* data_size_j = get("data_size");
  const Json* entries_j = get("tensors");
  if (!is_int(data_size_j) || data_size_j->get<int64_t>() < 0 || !entries_j || !entries_j->is_array())
    r.fail("corrupt header: invalid 'data_size' or 'tensors'");
  const int64_t data_size = data_size_j->get<int64_t>();
  const int64_t header_end = prefix + int64_t(header_len);
  const int64_t data_start = align_up(header_end);
  if (data_start > size || data_size > size - data_start)
    r.fail("truncated file: expected " + std::to_string(uint64_t(data_start) + uint64_t(data_size)) +
           " bytes, found " + std::to_string(size));
  const int64_t expected = data_start + data_size;
  if (size > expected && !options.allow_trailing_bytes)
    r.fail(std::to_string(size - expected) + " unexpected bytes after the end of the data");

  std::vector<Entry> entries;
  entries.reserve(entries_j->size());
  for (size_t k = 0; k < entries_j->size(); ++k)
    entries.push_back(check_entry(r, k, (*entries_j)[k], data_size, checksums));
  // Entries in file order: no two may share a byte; in version 2 what lies
  // between them (and between the header and the data) must be zero.
  std::vector<size_t> order(entries.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(entries[a].offset, entries[a].nbytes) < std::make_pair(entries[b].offset, entries[b].nbytes);
  });
  if (checksums) {
    const std::string pad = r.read(header_end, size_t(data_start - header_end));
    if (pad.find_first_not_of('\0') != std::string::npos)
      r.fail("damaged file: the padding after the header should be zero");
  }
  int64_t end = 0;  // of the last non-empty entry
  for (size_t k : order) {
    Entry& e = entries[k];
    if (!e.nbytes) continue;
    if (e.offset < end)
      r.fail("tensor " + std::to_string(k) + ": bytes [" + std::to_string(e.offset) + ", " +
             std::to_string(e.offset + e.nbytes) + ") overlap another entry's");
    if (checksums) check_zeros(r, data_start, end, e.offset);
    end = e.offset + e.nbytes;
  }
  if (checksums) check_zeros(r, data_start, end, data_size);
  for (size_t k : order) read_entry(r, entries[k], data_start, *root, int64_t(k), options);
  Value out = decode(r, *root, entries);
  if (consumed) *consumed = expected;
  return out;
}

}  // namespace lucid::checkpoint
