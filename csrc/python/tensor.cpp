// lucid._C.Tensor, dtypes, devices and NumPy interop.
#include <cstring>

#include "bindings.h"
#include "lucid/backend/cpu/conv2d_path.h"
#include "lucid/backend/cpu/gemm_bf16.h"
#include "lucid/backend/cpu/parallel.h"
#include "lucid/autograd/node.h"
#include "lucid/core/autocast.h"
#include "lucid/ops/dispatch.h"

namespace lucid::python {

// torch.set_default_device: where factories put a tensor given no device.
static Device& default_device() {
  static Device device;
  return device;
}

Device to_device(const py::handle& obj) {
  if (obj.is_none()) return default_device();
  if (py::isinstance<Device>(obj)) return obj.cast<Device>();
  if (py::isinstance<py::str>(obj)) return parse_device(obj.cast<std::string>());
  fail<TypeError>("expected a device (a string such as 'cpu' or a lucid.device), got ",
                  std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
}

static py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Bool: return py::dtype("bool");
    case DType::UInt8: return py::dtype("uint8");
    case DType::Int8: return py::dtype("int8");
    case DType::Int16: return py::dtype("int16");
    case DType::Int32: return py::dtype("int32");
    case DType::Int64: return py::dtype("int64");
    case DType::Float16: return py::dtype("float16");
    case DType::Float32: return py::dtype("float32");
    case DType::Float64: return py::dtype("float64");
    case DType::BFloat16: break;
  }
  fail<TypeError>("Got unsupported ScalarType BFloat16: NumPy has no bfloat16; convert with .float() first");
}

static DType from_numpy_dtype(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'b') return DType::Bool;
  if (kind == 'u' && size == 1) return DType::UInt8;
  if (kind == 'i' && size == 1) return DType::Int8;
  if (kind == 'i' && size == 2) return DType::Int16;
  if (kind == 'i' && size == 4) return DType::Int32;
  if (kind == 'i' && size == 8) return DType::Int64;
  if (kind == 'f' && size == 2) return DType::Float16;
  if (kind == 'f' && size == 4) return DType::Float32;
  if (kind == 'f' && size == 8) return DType::Float64;
  fail<TypeError>("can't convert np.ndarray of type numpy.", std::string(py::str(d)),
                  ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.");
}

py::array to_numpy(const Tensor& t) {
  if (t.requires_grad())
    fail<Error>("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  if (t.device().type != DeviceType::CPU && t.device().type != DeviceType::Metal)
    fail<TypeError>("can't convert ", t.device().str(), " device type tensor to numpy. Use Tensor.cpu() first.");
  void* data = t.raw_data("numpy()");
  const py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  // The tensor's own layout: a view gives the strided array over the same memory.
  std::vector<py::ssize_t> strides;
  for (auto s : t.strides()) strides.push_back(py::ssize_t(s * itemsize(t.dtype())));
  // The array shares the tensor's memory and keeps its storage alive.
  auto* keep = new std::shared_ptr<Storage>(t.storage());
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  return py::array(dt, shape, strides, data, owner);
}

Tensor from_numpy(py::array arr, bool copy) {
  const DType dt = from_numpy_dtype(arr.dtype());
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  const auto es = py::ssize_t(itemsize(dt));
  // Any non-negative element strides are shared, as PyTorch does.
  Shape strides;
  bool usable = arr.dtype().byteorder() != '>' && (reinterpret_cast<uintptr_t>(arr.data()) % size_t(es) == 0);
  int64_t span = 1;  // elements from the first to one past the last
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
    const py::ssize_t s = arr.strides()[d];
    if (!copy && s < 0)
      fail<>("At least one stride in the given numpy array is negative, and tensors with negative strides are not "
             "currently supported. (You can probably work around this by making a copy of your array  with "
             "array.copy().) ");
    usable &= s % es == 0;
    strides.push_back(s / es);
    if (shape[d] == 0) span = 0;
    else if (span) span += (shape[d] - 1) * (s / es);
  }
  if (copy || !usable) {
    py::array c = py::array::ensure(arr, py::array::c_style | py::array::forcecast);
    py::array native = py::module_::import("numpy").attr("ascontiguousarray")(c, c.dtype().attr("newbyteorder")("="));
    Tensor t = Tensor::empty(shape, dt);
    if (t.nbytes()) std::memcpy(t.raw_data(), native.data(), t.nbytes());
    return t;
  }
  // Share the array's memory; the storage holds a reference to it.
  auto* ref = new py::object(arr);
  auto storage = std::make_shared<Storage>(const_cast<void*>(arr.data()), size_t(span) * size_t(es), Device{}, [ref] {
    py::gil_scoped_acquire gil;
    delete ref;
  });
  Tensor t = Tensor::from_storage(storage, TensorMeta{shape, dt, Device{}});
  t.impl()->strides = strides;
  return t;
}

static py::object item(const Tensor& t_in) {
  // a TypeError (and a RuntimeError, as PyTorch's item()): where a number is expected, PyTorch's argument
  // parser rejects a tensor of many elements as a TypeError
  LUCID_CHECK_T(TypeError, t_in.numel() == 1, "a Tensor with ", t_in.numel(), " elements cannot be converted to Scalar");
  // Device memory the host cannot address is read through a copy (this waits for the device).
  const bool host = t_in.device().type == DeviceType::CPU || t_in.device().type == DeviceType::Metal;
  const Tensor t = host || t_in.is_symbolic() ? t_in : to_device(t_in.detach(), Device{});
  const void* p = t.raw_data("item()");
  switch (t.dtype()) {
    case DType::Bool: return py::bool_(*static_cast<const bool*>(p));
    case DType::UInt8: return py::int_(*static_cast<const uint8_t*>(p));
    case DType::Int8: return py::int_(*static_cast<const int8_t*>(p));
    case DType::Int16: return py::int_(*static_cast<const int16_t*>(p));
    case DType::Int32: return py::int_(*static_cast<const int32_t*>(p));
    case DType::Int64: return py::int_(*static_cast<const int64_t*>(p));
    case DType::Float16: return py::float_(half_to_float(static_cast<const Half*>(p)->bits));
    case DType::BFloat16: return py::float_(bf16_to_float(static_cast<const BFloat16*>(p)->bits));
    case DType::Float32: return py::float_(*static_cast<const float*>(p));
    case DType::Float64: return py::float_(*static_cast<const double*>(p));
  }
  return py::none();
}

// lucid.Size (a tuple subclass, set from Python at import) of a shape, made
// without calling its constructor; a plain tuple until it is set.
static PyTypeObject* g_size_type = nullptr;

static py::object shape_object(const Shape& shape) {
  if (!g_size_type) return py::tuple(py::cast(shape));
  const auto n = static_cast<Py_ssize_t>(shape.size());
  PyObject* out = g_size_type->tp_alloc(g_size_type, n);
  if (!out) throw py::error_already_set();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyLong_FromLongLong(shape[size_t(i)]);
    if (!item) {
      Py_DECREF(out);
      throw py::error_already_set();
    }
    PyTuple_SET_ITEM(out, i, item);
  }
  return py::reinterpret_steal<py::object>(out);
}

void init_tensor(py::module_& m) {
  m.def("_set_size_type", [](const py::type& cls) {
    LUCID_CHECK(PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), &PyTuple_Type), "Size must subclass tuple");
    Py_INCREF(cls.ptr());  // held for the process's life
    g_size_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  });
  py::enum_<DType> dtype(m, "dtype");
  for (int i = 0; i < kNumDTypes; ++i) dtype.value(dtype_name(DType(i)), DType(i));
  dtype.def_property_readonly("itemsize", [](DType t) { return itemsize(t); })
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating(t); })
      .def_property_readonly("is_signed", [](DType t) { return t != DType::Bool && t != DType::UInt8; });
  // Dtypes handed to Python are the enum's own objects, so `t.dtype is
  // lucid.float32` holds as with torch (repr/str are set in _tensor.py: the
  // enum's defaults win over definitions made here).
  static py::object* dtype_objects = new py::object[kNumDTypes];  // never freed: outlives the module
  for (int i = 0; i < kNumDTypes; ++i) dtype_objects[i] = dtype.attr(dtype_name(DType(i)));
  auto dtype_object = [](DType t) { return dtype_objects[int(t)]; };
  m.def("promote_types", &promote_types);
  m.def("get_default_dtype", [dtype_object] { return dtype_object(default_float_dtype()); });
  m.def("set_default_dtype", &set_default_float_dtype);
  m.def("dtype_from_name", &dtype_from_name);
  m.def("get_default_device", [] { return default_device(); });
  m.def("set_default_device", [](const py::handle& d) { default_device() = d.is_none() ? Device{} : to_device(d); });

  py::class_<Device>(m, "device")
      .def(py::init([](const std::string& s) { return parse_device(s); }))
      .def(py::init([](const std::string& type, int index) {
        Device d = parse_device(type);
        d.index = index;
        return d;
      }))
      .def_property_readonly("type", [](const Device& d) { return std::string(device_type_name(d.type)); })
      .def_property_readonly("index", [](const Device& d) { return d.index; })
      .def("__eq__", [](const Device& a, const py::object& b) {
        if (b.is_none()) return false;
        try {
          return a == to_device(b);
        } catch (const Error&) {
          return false;
        }
      })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device(type='" + std::string(device_type_name(d.type)) + "')"; });
  m.def("device_available", [](const std::string& type) { return device_available(parse_device(type).type); });

  py::class_<Tensor>(m, "Tensor", py::dynamic_attr())
      .def(py::init([](const Tensor& other) { return other.detach(); }), py::arg("data"))
      // PyTorch's legacy constructor: Tensor(2, 3), Tensor([1, 2]), Tensor(size), Tensor()
      .def(py::init([](const py::args& args, const py::kwargs& kwargs) {
        // leaked: a static py::object would be released after the interpreter is gone
        static py::object* legacy = new py::object(py::module_::import("lucid._tensor_surface").attr("_legacy_tensor"));
        return (*legacy)(*args, **kwargs).cast<Tensor>();
      }))
      .def_property_readonly("shape", [](const Tensor& t) { return shape_object(t.shape()); })
      .def_property_readonly("dtype", [dtype_object](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("device", [](const Tensor& t) { return t.device(); })
      .def_property_readonly("ndim", &Tensor::ndim)
      .def("dim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("element_size", [](const Tensor& t) { return itemsize(t.dtype()); })
      .def_property_readonly("is_symbolic", &Tensor::is_symbolic)
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool r) { t.set_requires_grad(r); })
      // In-place methods return the same Python object, like PyTorch.
      .def("requires_grad_", [](py::object self, bool r) {
             self.cast<Tensor&>().set_requires_grad(r);
             return self;
           }, py::arg("requires_grad") = true)
      .def_property("grad", [](const Tensor& t) -> py::object {
          Tensor g = t.grad();
          return g.defined() ? py::cast(g) : py::none();
        },
        [](Tensor& t, const py::object& g) {
          if (g.is_none()) {
            t.set_grad(Tensor());
            return;
          }
          if (!py::isinstance<Tensor>(g))
            throw py::type_error("assigned grad expected to be a Tensor or None but got grad of type " +
                                 std::string(py::str(py::type::of(g).attr("__name__"))));
          Tensor gt = g.cast<Tensor>();
          // PyTorch's errors: RuntimeError for both.
          LUCID_CHECK_T(Error, gt.shape() == t.shape(), "attempting to assign a gradient of size '",
                        shape_str(gt.shape()), "' to a tensor of size '", shape_str(t.shape()),
                        "'. Please ensure that the gradient and the tensor are the same size");
          LUCID_CHECK_T(Error, gt.dtype() == t.dtype(), "attempting to assign a gradient with dtype '",
                        dtype_name(gt.dtype()), "' to a tensor with dtype '", dtype_name(t.dtype()),
                        "'. The gradient must match the tensor's dtype.");
          t.set_grad(gt);
        })
      .def_property_readonly("is_leaf", [](const Tensor& t) {
        autograd::refresh_view_history(t);
        return t.is_leaf();
      })
      .def_property_readonly("grad_fn", [](const Tensor& t) -> py::object {
        autograd::refresh_view_history(t);
        if (!t.grad_fn()) return py::none();
        return py::cast(t.grad_fn());
      })
      .def("retain_grad", [](Tensor& t) {
        LUCID_CHECK_T(Error, t.requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
        if (t.is_leaf() || t.impl()->retains_grad) return;
        t.impl()->retains_grad = true;
        t.grad_fn()->retained.push_back({t.impl()->output_nr, t.impl_ptr()});
      })
      .def_property_readonly("retains_grad", [](const Tensor& t) { return t.impl()->retains_grad; })
      .def("detach", &Tensor::detach)
      .def("detach_", [](py::object self) {
        Tensor& t = self.cast<Tensor&>();
        t.impl()->grad_fn = nullptr;
        t.impl()->requires_grad = false;
        return self;
      })
      .def_property_readonly("_version", &Tensor::version)
      .def("_same", [](const Tensor& a, const Tensor& b) { return a.same(b); })
      .def("_shares_storage", [](const Tensor& a, const Tensor& b) {
        return a.storage() && a.storage() == b.storage();
      })
      .def("_set_data", [](Tensor& t, const Tensor& src) {
        // `t.data = src`: t takes src's memory and layout (storage, shape,
        // strides, dtype), keeping its own history.
        TensorImpl* d = t.impl();
        const TensorImpl* s = src.impl();
        d->storage = s->storage;
        d->meta = s->meta;
        d->strides = s->strides;
        d->offset = s->offset;
        d->trace_id = s->trace_id;
        d->value_id = s->value_id;
        d->value_version = s->value_version;
      })
      .def("item", &item)
      .def("numpy", &to_numpy)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data("data_ptr()")); })
      .def("stride", [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
        if (dim) return py::int_(t.strides()[normalize_axis(*dim, t.ndim())]);
        return py::tuple(py::cast(t.strides()));
      }, py::arg("dim") = py::none())
      .def("storage_offset", &Tensor::offset)
      .def("is_contiguous", [](const Tensor& t, const py::object&) { return t.is_contiguous(); },
           py::arg("memory_format") = py::none())
      .def("_is_view", &Tensor::is_view)
      .def_property_readonly("_base", [](const Tensor& t) -> py::object {
        if (!t.is_view()) return py::none();
        return py::cast(Tensor(t.impl()->view_base));
      })
      // The memory as PyTorch's untyped storage reports it: its address and
      // size in bytes (tensors sharing memory report the same storage).
      .def("_storage_ptr", [](const Tensor& t) {
        t.raw_data("untyped_storage()");
        return reinterpret_cast<uintptr_t>(t.storage()->data());
      })
      .def("_storage_nbytes", [](const Tensor& t) { return t.storage()->nbytes(); });

  m.def("from_numpy", [](py::array a) { return from_numpy(a, false); });
  m.def("from_numpy_copy", [](py::array a) { return from_numpy(a, true); });
  m.def("autocast_state", [] {
    const AutocastState s = autocast_state();
    return py::make_tuple(s.enabled, s.dtype);
  });
  m.def("set_autocast_state", [](bool enabled, DType dtype) { set_autocast_state({enabled, dtype}); });
  m.def("set_num_threads", &cpu::set_num_threads);
  m.def("get_num_threads", &cpu::num_threads);
  // Tests pin the CPU convolution path ("auto", "unfold", "direct") to check each on every shape.
  m.def("_set_cpu_conv_path", [](const std::string& path) {
    static const std::pair<const char*, cpu::ConvPath> paths[] = {
        {"auto", cpu::ConvPath::Auto}, {"unfold", cpu::ConvPath::Unfold}, {"direct", cpu::ConvPath::Direct}};
    for (const auto& [name, value] : paths)
      if (path == name) return cpu::set_conv_path(value);
    fail<InvalidArgument>("_set_cpu_conv_path: expected 'auto', 'unfold' or 'direct', got '", path, "'");
  });
  // Tests turn AMX off to check the vdpbf16ps kernel of bfloat16 matmuls too.
  m.def("_set_cpu_amx", &cpu::set_gemm_bf16_amx);
  m.def("eager_dispatch_count", &eager_dispatch_count);
}

}  // namespace lucid::python
