#include "lucid/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "lucid/checkpoint/json.h"
#include "lucid/ops/ops.h"

namespace lucid::checkpoint {
namespace {

constexpr uint64_t kMaxHeader = 100000000;  // the safetensors library's limit

// safetensors dtype <-> Lucid tensor dtype or NumPy dtype name.
struct DtypeName {
  const char* safetensors;
  std::optional<DType> tensor;
  const char* numpy;  // for NumPy arrays
  size_t itemsize;
};

const std::vector<DtypeName>& dtype_names() {
  static const std::vector<DtypeName> t = {
      {"BOOL", DType::Bool, "bool", 1},        {"U8", DType::UInt8, "uint8", 1},
      {"I8", DType::Int8, "int8", 1},         {"I16", DType::Int16, "int16", 2},
      {"U16", std::nullopt, "uint16", 2},      {"F16", DType::Float16, "float16", 2},
      {"BF16", DType::BFloat16, nullptr, 2},   {"I32", DType::Int32, "int32", 4},
      {"U32", std::nullopt, "uint32", 4},      {"F32", DType::Float32, "float32", 4},
      {"I64", DType::Int64, "int64", 8},       {"U64", std::nullopt, "uint64", 8},
      {"F64", DType::Float64, "float64", 8},   {"C64", std::nullopt, "complex64", 8},
  };
  return t;
}

const DtypeName* by_safetensors(const std::string& s) {
  for (const auto& d : dtype_names())
    if (s == d.safetensors) return &d;
  return nullptr;
}

struct Complaint {
  const std::string& file;
  [[noreturn]] void operator()(const std::string& problem) const { throw CheckpointError(file + ": " + problem); }
};

struct Item {
  std::string name;
  const DtypeName* dtype;
  Shape shape;
  const void* data;
  int64_t nbytes;
  Tensor owner;
};

}  // namespace

void save_safetensors(const Value& tensors, const Sink& sink, const Metadata& metadata) {
  require_little_endian();
  LUCID_CHECK_T(TypeError, tensors.kind() == Value::Kind::Dict,
                "safetensors files hold a dict {name: tensor}, got a ", tensors.kind_name());
  std::vector<Item> items;
  std::unordered_set<std::string> names;
  for (const auto& [key, v] : tensors.items()) {
    LUCID_CHECK_T(TypeError, key.kind() == Value::Kind::String,
                  "safetensors names are str, got a ", key.kind_name(), " key ", key.repr());
    const std::string& name = key.string();
    LUCID_CHECK_T(TypeError, name != "__metadata__", "'__metadata__' is reserved in safetensors files");
    names.insert(name);
    Item it{name, nullptr, {}, nullptr, 0, {}};
    if (v.kind() == Value::Kind::Tensor) {
      const Tensor& t = v.tensor();
      LUCID_CHECK_T(TypeError, !t.is_symbolic(), "cannot save '", name, "': it is a traced (symbolic) tensor with no data");
      for (const auto& d : dtype_names())
        if (d.tensor == t.dtype()) it.dtype = &d;
      it.owner = host_contiguous(t);
      it.shape = t.shape();
      it.nbytes = int64_t(it.owner.nbytes());
      it.data = it.nbytes ? it.owner.raw_data("saving") : nullptr;
    } else if (v.kind() == Value::Kind::Array) {
      const Array& a = v.array();
      for (const auto& d : dtype_names())
        if (d.numpy && a.dtype == d.numpy) it.dtype = &d;
      LUCID_CHECK_T(TypeError, it.dtype, "cannot save '", name, "': safetensors has no dtype for NumPy's ", a.dtype);
      it.shape = a.shape;
      it.nbytes = a.nbytes();
      it.data = a.data.get();
    } else {
      fail<TypeError>("cannot save '", name, "' of type ", v.kind_name(), ": safetensors files hold tensors only");
    }
    items.push_back(std::move(it));
  }
  // Wider elements first, then by name (as the safetensors library orders
  // them), so every tensor starts at a multiple of its element size.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.dtype->itemsize != b.dtype->itemsize ? a.dtype->itemsize > b.dtype->itemsize : a.name < b.name;
  });
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  int64_t at = 0;
  for (const Item& it : items) {
    Json e = Json::object();
    e["dtype"] = it.dtype->safetensors;
    Json shape = Json::array();
    for (int64_t d : it.shape) shape.push_back(d);
    e["shape"] = std::move(shape);
    e["data_offsets"] = Json::array({at, at + it.nbytes});
    header[it.name] = std::move(e);
    at += it.nbytes;
  }
  std::string text = dump_json(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  char len[8];
  for (int k = 0; k < 8; ++k) len[k] = char((uint64_t(text.size()) >> (8 * k)) & 0xff);
  sink(len, 8);
  sink(text.data(), text.size());
  for (const Item& it : items)
    if (it.nbytes) sink(it.data, size_t(it.nbytes));
}

void save_safetensors(const Value& tensors, const std::string& path, const Metadata& metadata) {
  require_little_endian();
  save_safetensors(tensors, [](const void*, size_t) {}, metadata);  // every error before the file exists
  write_atomically(path, [&](const Sink& sink) { save_safetensors(tensors, sink, metadata); });
}

bool looks_like_safetensors(Source& source) {
  unsigned char head[9];
  if (source.read_at(0, head, 9) != 9) return false;
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | head[k];
  return head[8] == '{' && n >= 2 && n <= kMaxHeader && n <= uint64_t(source.size() - 8);
}

SafetensorsFile load_safetensors(Source& source, const std::string& name, const LoadOptions& options) {
  require_little_endian();
  const Complaint bad{name};
  const int64_t size = source.size();
  unsigned char len[8];
  if (source.read_at(0, len, 8) != 8) bad("truncated file: " + std::to_string(size) + " bytes, not even a header");
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | len[k];
  if (n > kMaxHeader) bad("safetensors header of " + std::to_string(n) + " bytes is larger than the 100 MB limit");
  if (n > uint64_t(size - 8))
    bad("truncated file: header of " + std::to_string(n) + " bytes announced, file has " + std::to_string(size) +
        " bytes");
  std::string text(size_t(n), '\0');
  if (source.read_at(8, &text[0], size_t(n)) != n) bad("truncated file: the header ends early");
  if (text.empty() || text[0] != '{') bad("not a safetensors header: it does not start with '{'");
  Json header;
  std::string error;
  if (!parse_json(text, header, error)) bad("corrupt safetensors header (" + error + ")");
  if (!header.is_object()) bad("corrupt safetensors header: not an object");
  const int64_t data_start = 8 + int64_t(n);
  const int64_t data_size = size - data_start;

  SafetensorsFile out;
  struct Planned {
    std::string name;
    const DtypeName* dtype;
    Shape shape;
    int64_t begin, end;
  };
  std::vector<Planned> planned;
  for (const auto& [key, e] : header.items()) {
    if (key == "__metadata__") {
      if (!e.is_object()) bad("'__metadata__' is not a {str: str} object");
      for (const auto& [mk, mv] : e.items()) {
        if (!mv.is_string()) bad("'__metadata__' value of " + py_str_repr(mk) + " is not a str");
        out.metadata.emplace_back(mk, mv.get<std::string>());
      }
      continue;
    }
    const std::string what = "tensor " + py_str_repr(key);
    if (!e.is_object()) bad(what + ": entry is not an object");
    auto dt = e.find("dtype");
    auto sh = e.find("shape");
    auto off = e.find("data_offsets");
    if (dt == e.end() || !dt->is_string()) bad(what + ": missing or invalid 'dtype'");
    const DtypeName* d = by_safetensors(dt->get<std::string>());
    if (!d) bad(what + " has dtype " + dt->get<std::string>() + ", which Lucid cannot hold");
    if (sh == e.end() || !sh->is_array() || sh->size() > size_t(kMaxDims))
      bad(what + ": missing or invalid 'shape'");
    Planned p{key, d, {}, 0, 0};
    int64_t numel = 1, span = int64_t(d->itemsize);
    for (const Json& dim : *sh) {
      if (!dim.is_number_integer() || dim.get<int64_t>() < 0) bad(what + ": invalid shape " + json_repr(*sh));
      const int64_t v = dim.get<int64_t>();
      if (__builtin_mul_overflow(span, std::max<int64_t>(v, 1), &span))
        bad(what + ": shape " + json_repr(*sh) + " overflows");
      numel *= v;
      p.shape.push_back(v);
    }
    if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_integer() ||
        !(*off)[1].is_number_integer() || (*off)[0].get<int64_t>() < 0 || (*off)[1].get<int64_t>() < (*off)[0].get<int64_t>())
      bad(what + ": invalid 'data_offsets'");
    p.begin = (*off)[0].get<int64_t>();
    p.end = (*off)[1].get<int64_t>();
    if (p.end - p.begin != numel * int64_t(d->itemsize))
      bad(what + ": data_offsets " + json_repr(*off) + " hold " + std::to_string(p.end - p.begin) +
          " bytes, its shape " + json_repr(*sh) + " of " + d->safetensors + " needs " +
          std::to_string(numel * int64_t(d->itemsize)));
    planned.push_back(std::move(p));
  }
  // As the safetensors library requires: the tensors tile the data exactly.
  std::vector<const Planned*> order;
  for (const auto& p : planned) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const Planned* a, const Planned* b) {
    return std::make_pair(a->begin, a->end) < std::make_pair(b->begin, b->end);
  });
  int64_t at = 0;
  for (const Planned* p : order) {
    if (p->begin != at)
      bad("tensor " + py_str_repr(p->name) + ": data_offsets start at " + std::to_string(p->begin) + ", expected " +
          std::to_string(at) + " (tensors must follow each other without gaps or overlaps)");
    at = p->end;
  }
  if (at != data_size)
    bad("the tensors hold " + std::to_string(at) + " bytes of data, the file has " + std::to_string(data_size));

  std::sort(planned.begin(), planned.end(), [](const Planned& a, const Planned& b) { return a.name < b.name; });
  out.tensors = Value::dict();
  Value::Items& items = out.tensors.items();
  for (const Planned& p : planned) {
    const int64_t nbytes = p.end - p.begin;
    void* dst = nullptr;
    Value v;
    Tensor t;
    std::shared_ptr<uint8_t> buffer;
    if (p.dtype->tensor) {
      t = Tensor::empty(p.shape, *p.dtype->tensor, Device{});
      dst = nbytes ? t.raw_data() : nullptr;
    } else if (nbytes) {
      buffer = std::shared_ptr<uint8_t>(new uint8_t[size_t(nbytes)], std::default_delete<uint8_t[]>());
      dst = buffer.get();
    }
    if (nbytes && source.read_at(data_start + p.begin, dst, size_t(nbytes)) != size_t(nbytes))
      bad("truncated file: tensor " + py_str_repr(p.name) + " ends past the end of the file");
    if (p.dtype->itemsize == 1 && std::strcmp(p.dtype->safetensors, "BOOL") == 0) {
      const auto* b = static_cast<const unsigned char*>(dst);
      for (int64_t k = 0; k < nbytes; ++k)
        if (b[k] > 1) bad("bool tensor " + py_str_repr(p.name) + " holds bytes other than 0 and 1");
    }
    if (p.dtype->tensor) {
      if (options.map_location) t = options.map_location(t, "cpu");
      v = Value(t);
    } else {
      v = Value::array(Array{p.dtype->numpy, p.shape, false, buffer});
    }
    items.emplace_back(Value(p.name), std::move(v));
  }
  return out;
}

SafetensorsFile load_safetensors(const std::string& path, const LoadOptions& options) {
  FileSource src(path);
  return load_safetensors(src, path, options);
}

}  // namespace lucid::checkpoint
