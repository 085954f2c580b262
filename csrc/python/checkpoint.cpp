// Checkpoints: Python objects <-> checkpoint Values, and the one reader and
// writer of the core (lucid/checkpoint). python/lucid/serialization.py is the
// thin public layer (paths, streams, pickling, PyTorch files).
#include <unordered_map>
#include <unordered_set>

#include "bindings.h"
#include "lucid/checkpoint/crc32c.h"
#include "lucid/checkpoint/format.h"
#include "lucid/checkpoint/safetensors.h"

namespace lucid::python {

namespace ckpt = lucid::checkpoint;

namespace {

PyObject* checkpoint_error = nullptr;

std::string type_name(py::handle obj) {
  py::handle t = py::type::handle_of(obj);
  return py::str(t.attr("__module__")).cast<std::string>() + "." + py::str(t.attr("__qualname__")).cast<std::string>();
}

// NumPy's dtype -> the name a checkpoint stores, or "" when it has none
// (object, string, structured, datetime, long double dtypes).
std::string numpy_name(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  const std::string bits = std::to_string(8 * size);
  switch (kind) {
    case 'b': return "bool";
    case 'i': return size <= 8 ? "int" + bits : "";
    case 'u': return size <= 8 ? "uint" + bits : "";
    case 'f': return size == 2 || size == 4 || size == 8 ? "float" + bits : "";
    case 'c': return size == 8 || size == 16 ? "complex" + bits : "";
    default: return "";
  }
}

// The bytes of a NumPy array kept alive by the array itself (the GIL is
// taken to drop it, wherever the last reference goes).
std::shared_ptr<const uint8_t> hold(py::array arr) {
  auto* owner = new py::object(arr);
  const auto* data = static_cast<const uint8_t*>(arr.data());
  return std::shared_ptr<const uint8_t>(data, [owner](const uint8_t*) {
    py::gil_scoped_acquire gil;
    delete owner;
  });
}

class ToValue {
 public:
  ToValue(py::object parameter_type, py::object pickle)
      : parameter_type_(std::move(parameter_type)), pickle_(std::move(pickle)) {
    py::module_ np = py::module_::import("numpy");
    ndarray_ = np.attr("ndarray");
    generic_ = np.attr("generic");
    asarray_ = np.attr("asarray");
    ordered_dict_ = py::module_::import("collections").attr("OrderedDict");
  }

  Value convert(py::handle obj, const std::string& where, int depth) {
    PyObject* o = obj.ptr();
    if (o == Py_None) return Value();
    if (PyBool_Check(o)) return Value(o == Py_True);
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (!overflow) return Value(int64_t(v));
      return Value::big_integer(py::str(obj).cast<std::string>());
    }
    if (PyFloat_CheckExact(o)) return Value(PyFloat_AsDouble(o));
    if (PyUnicode_CheckExact(o)) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(o, &n);
      if (!s) {
        PyErr_Clear();
        fail<TypeError>("cannot save ", where, ": a str that is not valid Unicode (it holds a lone surrogate)");
      }
      return Value(std::string(s, size_t(n)));
    }
    if (py::isinstance<Tensor>(obj)) {
      Tensor t = obj.cast<Tensor>();
      return parameter_type_ && py::isinstance(obj, parameter_type_) ? Value::parameter(t) : Value(t);
    }
    if (py::isinstance<DType>(obj)) return Value(obj.cast<DType>());
    if (py::isinstance<Device>(obj)) return Value(obj.cast<Device>());
    if (Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(ndarray_.ptr())) {
      if (auto it = arrays_.find(o); it != arrays_.end()) return it->second;
      auto arr = py::reinterpret_borrow<py::array>(obj);
      const std::string name = numpy_name(arr.dtype());
      if (!name.empty()) {
        Value v = array(arr, name, false);
        arrays_.emplace(o, v);
        return v;
      }
    } else if (py::isinstance(obj, generic_)) {
      py::array arr = asarray_(obj);
      const std::string name = numpy_name(arr.dtype());
      if (!name.empty()) return array(arr, name, true);
    }
    const bool list = PyList_CheckExact(o), tuple = PyTuple_CheckExact(o), dict = PyDict_CheckExact(o);
    const bool odict = Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(ordered_dict_.ptr());
    if (!(list || tuple || dict || odict)) return pickled(obj, where);

    if (depth >= ckpt::kMaxNesting)
      fail<InvalidArgument>("cannot save ", where, ": containers nested more than ", ckpt::kMaxNesting, " levels deep");
    if (!active_.insert(o).second) fail<InvalidArgument>("cannot save ", where, ": the structure contains itself");
    struct Leave {
      std::unordered_set<PyObject*>& s;
      PyObject* o;
      ~Leave() { s.erase(o); }
    } leave{active_, o};
    if (list || tuple) {
      std::vector<Value> out;
      py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
      const size_t n = py::len(seq);
      out.reserve(n);
      for (size_t k = 0; k < n; ++k) out.push_back(convert(seq[k], where + "[" + std::to_string(k) + "]", depth + 1));
      return list ? Value::list(std::move(out)) : Value::tuple(std::move(out));
    }
    Value out = Value::dict({}, odict);
    Value::Items& items = out.items();
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(obj)) {
      Value key = this->key(k, where, depth + 1);
      items.emplace_back(std::move(key), convert(v, where + "[" + py::repr(k).cast<std::string>() + "]", depth + 1));
    }
    if (odict) {
      py::object meta = py::getattr(obj, "_metadata", py::none());
      if (!meta.is_none()) out.set_metadata(convert(meta, where + "._metadata", depth + 1));
    }
    return out;
  }

 private:
  py::object parameter_type_, pickle_, ndarray_, generic_, asarray_, ordered_dict_;
  std::unordered_set<PyObject*> active_;
  std::unordered_map<PyObject*, Value> arrays_;  // an array saved twice is stored once

  Value array(py::array arr, const std::string& name, bool scalar) {
    py::dtype little = arr.dtype().attr("newbyteorder")("<");
    // C order, little-endian: a copy only where needed (asarray keeps 0-d arrays 0-d)
    py::array c = asarray_(arr, little, py::arg("order") = "C");
    std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
    return Value::array(Array{name, Shape(shape.begin(), shape.end()), scalar, hold(c)});
  }

  Value key(py::handle k, const std::string& where, int depth) {
    PyObject* o = k.ptr();
    const bool plain = o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
                       PyUnicode_CheckExact(o) || py::isinstance<DType>(k) || py::isinstance<Device>(k);
    if (PyTuple_CheckExact(o)) {
      std::vector<Value> parts;
      for (py::handle e : py::reinterpret_borrow<py::tuple>(k)) parts.push_back(key(e, where, depth + 1));
      return Value::tuple(std::move(parts));
    }
    if (!plain)
      fail<TypeError>("cannot save a key of ", where, ": dict key of type ",
                      py::str(py::type::handle_of(k).attr("__name__")).cast<std::string>(),
                      "; supported: None, bool, int, float, str, dtypes, devices and tuples of them");
    return convert(k, "a key of " + where, depth);
  }

  // What the data kinds cannot express is pickled (serialization.py's
  // pickler stores the tensors and arrays it meets as references).
  Value pickled(py::handle obj, const std::string& where) {
    if (!pickle_) fail<TypeError>("cannot save ", where, " of type ", type_name(obj));
    py::tuple out = pickle_(obj, where);
    std::vector<Value> refs;
    py::list objects = out[1];
    for (size_t k = 0; k < objects.size(); ++k) {
      Value r = convert(objects[k], where + " (reference " + std::to_string(k) + ")", 0);
      if (r.kind() != Value::Kind::Tensor && r.kind() != Value::Kind::Array)
        fail<TypeError>("cannot save ", where, ": a pickled object may refer only to tensors and arrays");
      refs.push_back(std::move(r));
    }
    return Value::pickled(out[0].cast<std::string>(), std::move(refs));
  }
};

class ToPython {
 public:
  ToPython(py::object make_parameter, py::object unpickle)
      : make_parameter_(std::move(make_parameter)), unpickle_(std::move(unpickle)) {
    ordered_dict_ = py::module_::import("collections").attr("OrderedDict");
  }

  py::object convert(const Value& v) {
    using K = Value::Kind;
    switch (v.kind()) {
      case K::None: return py::none();
      case K::Bool: return py::bool_(v.boolean());
      case K::Int: return py::int_(v.integer());
      case K::BigInt:
        return py::reinterpret_steal<py::object>(PyLong_FromString(v.big_integer().c_str(), nullptr, 10));
      case K::Float: return py::float_(v.number());
      case K::String: return py::str(v.string());
      case K::DType: return py::cast(v.dtype());
      case K::Device: return py::cast(v.device());
      case K::Tensor:
      case K::Array:
      case K::Pickled: {
        if (auto it = memo_.find(v.identity()); it != memo_.end()) return it->second;
        py::object out = shared(v);
        memo_.emplace(v.identity(), out);
        return out;
      }
      case K::List:
      case K::Tuple: {
        const auto& e = v.elements();
        if (v.kind() == K::Tuple) {
          py::tuple out(e.size());
          for (size_t k = 0; k < e.size(); ++k) out[k] = convert(e[k]);
          return std::move(out);
        }
        py::list out(e.size());
        for (size_t k = 0; k < e.size(); ++k) out[k] = convert(e[k]);
        return std::move(out);
      }
      case K::Dict: {
        py::object out = v.ordered() ? ordered_dict_() : py::dict();
        for (const auto& [k, x] : v.items()) out[convert(k)] = convert(x);
        if (const Value* meta = v.metadata()) out.attr("_metadata") = convert(*meta);
        return out;
      }
    }
    return py::none();
  }

 private:
  py::object make_parameter_, unpickle_, ordered_dict_;
  std::unordered_map<const void*, py::object> memo_;  // an object saved once loads as one

  py::object shared(const Value& v) {
    if (v.kind() == Value::Kind::Tensor) {
      py::object t = py::cast(v.tensor());
      return v.is_parameter() && make_parameter_ ? make_parameter_(t) : t;
    }
    if (v.kind() == Value::Kind::Array) {
      const Array& a = v.array();
      std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
      py::array out(py::dtype(a.dtype), shape);
      if (a.nbytes()) std::memcpy(out.mutable_data(), a.data.get(), size_t(a.nbytes()));
      return a.scalar ? out[py::tuple()] : py::object(out);
    }
    const Pickled& p = v.pickled();
    py::list refs;
    for (const Value& r : p.refs) refs.append(convert(r));
    if (!unpickle_) fail<TypeError>("the checkpoint holds a pickled Python object and no unpickler was given");
    return unpickle_(py::bytes(p.bytes), refs);
  }
};

ckpt::MapLocation map_location(py::object fn) {
  if (fn.is_none()) return nullptr;
  // (tensor, saved device) -> tensor, written in Python; called with the GIL released around it
  auto shared = std::make_shared<py::object>(std::move(fn));
  return [shared](Tensor t, const std::string& saved) {
    py::gil_scoped_acquire gil;
    py::object out = (*shared)(t, saved);
    if (!py::isinstance<Tensor>(out))
      fail<TypeError>("map_location callable must return a tensor, got ", type_name(out));
    return out.cast<Tensor>();
  };
}

// Drops a Value while holding the GIL (its arrays may own Python objects).
struct ValueHolder {
  Value v;
};

// A path (str) or a write(bytes) callable.
void write_to(py::object target, const std::function<void(const ckpt::Sink&)>& write,
              const std::function<void(const std::string&)>& write_path) {
  if (py::isinstance<py::str>(target)) {
    const std::string path = target.cast<std::string>();
    py::gil_scoped_release release;
    write_path(path);
    return;
  }
  write([&](const void* data, size_t n) {
    target(py::memoryview::from_memory(data, py::ssize_t(n)));
  });
}

}  // namespace

void init_checkpoint(py::module_& m) {
  checkpoint_error = PyErr_NewExceptionWithDoc(
      "lucid.serialization.CheckpointError",
      "A file that is not a readable checkpoint: damaged, truncated or crafted. The message names the file "
      "and what is wrong with it.",
      PyExc_ValueError, nullptr);
  m.add_object("CheckpointError", py::handle(checkpoint_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CheckpointError& e) {
      // a damaged file's bytes may appear in the message: never fail on decoding it
      const std::string what = e.what();
      PyObject* text = PyUnicode_DecodeUTF8(what.data(), Py_ssize_t(what.size()), "backslashreplace");
      PyErr_SetObject(checkpoint_error, text);
      Py_XDECREF(text);
    }
  });

  m.def(
      "checkpoint_save",
      [](py::object obj, py::object target, py::object parameter_type, py::object pickle) {
        ToValue convert(std::move(parameter_type), std::move(pickle));
        ValueHolder value{convert.convert(obj, "obj", 0)};
        write_to(
            target, [&](const ckpt::Sink& sink) { ckpt::save(value.v, sink); },
            [&](const std::string& path) { ckpt::save(value.v, path); });
      },
      py::arg("obj"), py::arg("target"), py::arg("parameter_type"), py::arg("pickle"),
      "Saves `obj` in Lucid's format to a path (atomically) or through a write(bytes) callable.");

  m.def(
      "checkpoint_load",
      [](py::object source, const std::string& name, py::object location, bool allow_trailing,
         py::object make_parameter, py::object unpickle) {
        ckpt::LoadOptions options;
        options.map_location = map_location(location);
        options.allow_trailing_bytes = allow_trailing;
        Value value;
        int64_t consumed = 0;
        if (py::isinstance<py::str>(source)) {
          const std::string path = source.cast<std::string>();
          py::gil_scoped_release release;
          ckpt::FileSource src(path);
          value = ckpt::load(src, name, options, &consumed);
        } else {
          py::buffer_info buf = py::reinterpret_borrow<py::buffer>(source).request();
          ckpt::MemorySource src(buf.ptr, size_t(buf.size * buf.itemsize));
          value = ckpt::load(src, name, options, &consumed);
        }
        ToPython convert(std::move(make_parameter), std::move(unpickle));
        return py::make_tuple(convert.convert(value), consumed);
      },
      py::arg("source"), py::arg("name"), py::arg("map_location"), py::arg("allow_trailing"),
      py::arg("make_parameter"), py::arg("unpickle"),
      "Loads a Lucid checkpoint from a path or a bytes-like object: (object, bytes it spanned).");

  m.def(
      "safetensors_save",
      [](py::dict tensors, py::object target, py::object metadata) {
        ToValue convert{py::object(), py::object()};
        ValueHolder value{Value::dict()};
        for (auto [k, v] : tensors) {
          if (!py::isinstance<py::str>(k))
            fail<TypeError>("safetensors names are str, got ", type_name(k));
          const std::string name = k.cast<std::string>();
          value.v.items().emplace_back(Value(name), convert.convert(v, py::repr(k).cast<std::string>(), 0));
        }
        ckpt::Metadata meta;
        if (!metadata.is_none()) {
          for (auto [k, v] : py::dict(metadata)) {
            if (!py::isinstance<py::str>(k) || !py::isinstance<py::str>(v))
              fail<TypeError>("safetensors metadata is a dict {str: str}, got a ", type_name(k), " key with a ",
                              type_name(v), " value");
            meta.emplace_back(k.cast<std::string>(), v.cast<std::string>());
          }
        }
        write_to(
            target, [&](const ckpt::Sink& sink) { ckpt::save_safetensors(value.v, sink, meta); },
            [&](const std::string& path) { ckpt::save_safetensors(value.v, path, meta); });
      },
      py::arg("tensors"), py::arg("target"), py::arg("metadata"));

  m.def(
      "safetensors_load",
      [](py::object source, const std::string& name, py::object location) {
        ckpt::LoadOptions options;
        options.map_location = map_location(location);
        ckpt::SafetensorsFile file;
        if (py::isinstance<py::str>(source)) {
          const std::string path = source.cast<std::string>();
          py::gil_scoped_release release;
          ckpt::FileSource src(path);
          file = ckpt::load_safetensors(src, name, options);
        } else {
          py::buffer_info buf = py::reinterpret_borrow<py::buffer>(source).request();
          ckpt::MemorySource src(buf.ptr, size_t(buf.size * buf.itemsize));
          file = ckpt::load_safetensors(src, name, options);
        }
        ToPython convert{py::object(), py::object()};
        py::dict meta;
        for (const auto& [k, v] : file.metadata) meta[py::str(k)] = py::str(v);
        return py::make_tuple(convert.convert(file.tensors), meta);
      },
      py::arg("source"), py::arg("name"), py::arg("map_location"),
      "Loads a .safetensors file from a path or a bytes-like object: ({name: tensor}, metadata).");

  m.def(
      "looks_like_safetensors",
      [](py::bytes head, int64_t size) {
        const std::string s = head;
        struct Head : ckpt::Source {
          const std::string& s;
          int64_t n;
          Head(const std::string& s, int64_t n) : s(s), n(n) {}
          int64_t size() const override { return n; }
          size_t read_at(int64_t pos, void* buf, size_t k) override {
            return ckpt::MemorySource(s.data(), s.size()).read_at(pos, buf, k);
          }
        } src(s, size);
        return ckpt::looks_like_safetensors(src);
      },
      py::arg("head"), py::arg("size"), "Whether a file starting with `head` (of `size` bytes) is a safetensors file.");

  m.def(
      "checkpoint_stores_array",
      [](py::handle obj) {
        py::module_ np = py::module_::import("numpy");
        return Py_TYPE(obj.ptr()) == reinterpret_cast<PyTypeObject*>(np.attr("ndarray").ptr()) &&
               !numpy_name(py::reinterpret_borrow<py::array>(obj).dtype()).empty();
      },
      py::arg("obj"), "Whether a checkpoint stores `obj` as a NumPy array of its own (not pickled).");

  m.def(
      "crc32c",
      [](py::buffer data, uint32_t crc, bool portable) {
        py::buffer_info b = data.request();
        const size_t n = size_t(b.size * b.itemsize);
        return portable ? ckpt::crc32c_portable(b.ptr, n, crc) : ckpt::crc32c(b.ptr, n, crc);
      },
      py::arg("data"), py::arg("crc") = 0, py::arg("portable") = false,
      "CRC-32C of a bytes-like object (the checkpoint checksum), continuing from `crc`.");
}

}  // namespace lucid::python
