// lucid._C._metal_plan: the Metal backend's portable lowering plans, run by
// the reference interpreter on the host. For tests only: the CPU suite
// compares every primitive's plan, and whole compiled steps, with the CPU
// backend (tests/test_metal_plan.py). Nothing here is a device.
#include <cstring>
#include <memory>

#include "bindings.h"
#include "lucid/backend/metal/lower.h"
#include "lucid/backend/metal/reference.h"
#include "lucid/backend/metal/step_plan.h"

namespace lucid::python {

namespace {

metal::ReferenceOptions reference_options(bool eager, bool floor_modulo, bool drop_reduced_axes) {
  metal::ReferenceOptions o;
  o.eager = eager;
  o.interpreter.float_modulo_is_floor = floor_modulo;
  o.interpreter.reductions_drop_axes = drop_reduced_axes;
  return o;
}

// Records each node's eager plan key while compiling (the eager program
// cache key), then runs like the eager reference.
struct PlanRecorder {
  std::shared_ptr<std::vector<py::tuple>> keys = std::make_shared<std::vector<py::tuple>>();
};

}  // namespace

void init_metal_plan(py::module_& root) {
  py::module_ m = root.def_submodule("_metal_plan", "The Metal backend's lowering plans, run on the host (tests)");

  m.def(
      "reference_compiler",
      [](bool eager, bool floor_modulo, bool drop_reduced_axes, bool optimize) {
        const metal::ReferenceOptions o = reference_options(eager, floor_modulo, drop_reduced_axes);
        GraphCompiler c;
        c.optimize = optimize;
        c.name = std::string("metal-plan") + (eager ? "-eager" : "") + (floor_modulo ? "-floormod" : "") +
                 (drop_reduced_axes ? "-dropaxes" : "") + (optimize ? "" : "-unoptimized");
        c.fn = [o](graph::Graph g, std::vector<graph::RandomKeyFeed> rf) {
          return metal::compile_reference(std::move(g), std::move(rf), o);
        };
        return c;
      },
      py::arg("eager") = false, py::arg("floor_modulo") = false, py::arg("drop_reduced_axes") = false,
      py::arg("optimize") = true,
      "Compiles a traced graph into an executable that runs the Metal plans by the reference interpreter; "
      "optimize=False skips the graph passes (so constants stay creation nodes)");

  m.def("kinds", &metal::metal_kinds, "(primitive kind, how the metal device runs it) for every kind it supports");

  py::class_<PlanRecorder>(m, "PlanRecorder")
      .def(py::init<>())
      .def("compiler",
           [](const PlanRecorder& r, bool optimize) {
             GraphCompiler c;
             c.optimize = optimize;
             c.name = "metal-plan-recorder";
             auto keys = r.keys;
             c.fn = [keys](graph::Graph g, std::vector<graph::RandomKeyFeed> rf) {
               metal::decompose_unlowered(g);
               for (const auto& n : g.nodes) {
                 py::gil_scoped_acquire gil;
                 if (metal::lowering_of(n.prim->kind()) != metal::Lowering::Graph) {
                   keys->push_back(py::make_tuple(metal::op_kind_name(n.prim->kind()), n.prim->name(), py::none()));
                   continue;
                 }
                 std::vector<TensorMeta> in, out;
                 for (int v : n.inputs) in.push_back(g.values[size_t(v)].meta);
                 for (int v : n.outputs) out.push_back(g.values[size_t(v)].meta);
                 keys->push_back(py::make_tuple(metal::op_kind_name(n.prim->kind()), n.prim->name(),
                                               py::bytes(metal::plan_eager(*n.prim, in, out).key())));
               }
               return metal::compile_reference(std::move(g), std::move(rf), reference_options(true, false, false));
             };
             return c;
           },
           py::arg("optimize") = true)
      .def_property_readonly("keys", [](const PlanRecorder& r) { return *r.keys; });

  m.def(
      "read_strided",
      [](const Tensor& storage, const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset) {
        LUCID_CHECK(storage.shape().size() == 1, "read_strided: a 1-D storage tensor");
        metal::Plan plan;
        metal::PlanBuilder g(plan);
        const int flat = g.placeholder(storage.dtype(), storage.shape());
        g.target(metal::read_strided(g, flat, sizes, strides, offset));
        auto res = metal::interpret(plan, {storage.raw_data()});
        Tensor out = Tensor::empty(sizes, storage.dtype());
        std::memcpy(out.raw_data(), res[0].data(), res[0].size());
        return py::make_tuple(out, metal::mps_op_name(plan.nodes[plan.nodes.size() - 2].op));
      },
      py::arg("storage"), py::arg("sizes"), py::arg("strides"), py::arg("offset"),
      "A view (sizes, element strides, offset) of a flat buffer read the way the Metal plans read strided "
      "operands; returns (values, the MPSGraph operation that read them)");
}

}  // namespace lucid::python
