// Tensors, ops, autograd, errors, devices and the graph layer, through the
// public headers.
#include "helpers.h"

#include <lucid/ops/norm.h>

using lucid::Tensor;
using lucid_test::check_close;
using lucid_test::message_of;
using lucid_test::values;

TEST_CASE("tensors: creation, metadata and data round trips") {
  Tensor t = lucid::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.shape() == lucid::Shape{2, 3});
  CHECK(t.dtype() == lucid::DType::Float32);
  CHECK(t.device() == lucid::Device{});
  CHECK(t.device().str() == "cpu");
  CHECK(t.numel() == 6);
  CHECK(lucid::to_vector<float>(t) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(lucid::to_vector<int64_t>(t) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(lucid::item(lucid::sum(t)).to_double() == 21.0);
  CHECK(lucid::item(lucid::scalar_tensor(7, lucid::DType::Int64)).kind == lucid::Scalar::Kind::Int);
  CHECK(values(lucid::zeros({3})) == std::vector<double>{0, 0, 0});
  CHECK(lucid::arange(0, 5, 1, lucid::DType::Int64).numel() == 5);
  // reshape of a contiguous tensor shares storage
  Tensor r = lucid::reshape(t, {3, 2});
  CHECK(r.storage() == t.storage());
  CHECK(message_of<lucid::InvalidArgument>([&] { lucid::from_vector<float>({1, 2, 3}, {2, 2}); }) ==
        "from_vector: 3 values cannot fill a tensor of shape [2, 2] (4 elements)");
  CHECK(message_of<lucid::TypeError>([&] { lucid::item(t); }) ==
        "a Tensor with 6 elements cannot be converted to Scalar");
}

TEST_CASE("ops: arithmetic, broadcasting, matmul, reductions") {
  Tensor a = lucid::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = lucid::from_vector<float>({10, 20}, {2});
  CHECK(values(a + b) == std::vector<double>{11, 22, 13, 24});
  CHECK(values(a * 2.0 - 1.0) == std::vector<double>{1, 3, 5, 7});
  CHECK(values(lucid::matmul(a, a)) == std::vector<double>{7, 10, 15, 22});
  CHECK(values(lucid::sum(a, {0})) == std::vector<double>{4, 6});
  CHECK(values(lucid::mean(a, {1}, true)) == std::vector<double>{1.5, 3.5});
  CHECK(values(lucid::argmax(a, 1)) == std::vector<double>{1, 1});
  CHECK(values(lucid::transpose(a, 0, 1)) == std::vector<double>{1, 3, 2, 4});
  check_close(lucid::softmax(lucid::from_vector<float>({0, 0}), 0), lucid::from_vector<float>({0.5, 0.5}));
  // wrapped-number promotion keeps the tensor's dtype; tensors promote
  CHECK((lucid::ones({2}, lucid::DType::Int32) * 2.5).dtype() == lucid::DType::Float32);
  CHECK((lucid::ones({2}, lucid::DType::Float16) * 2.5).dtype() == lucid::DType::Float16);
  CHECK(lucid::promote_types(lucid::DType::Int64, lucid::DType::Float32) == lucid::DType::Float32);
  Tensor w = lucid::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(values(lucid::linear(a, w, lucid::from_vector<float>({0, 0, 1}))) == std::vector<double>{1, 2, 4, 3, 4, 8});
}

TEST_CASE("ops: errors are the core's exceptions with Python's messages") {
  Tensor a = lucid::ones({2, 3});
  Tensor b = lucid::ones({4, 5});
  // one exception type per kind; all derive from lucid::Error (a std::runtime_error)
  CHECK_THROWS_AS(lucid::add(a, b), lucid::InvalidArgument);
  CHECK_THROWS_AS(lucid::matmul(a, b), lucid::Error);
  CHECK_THROWS_AS(lucid::transpose(a, 0, 5), lucid::IndexError);
  CHECK_THROWS_AS(lucid::parse_device("tpu"), lucid::Error);
  const std::string msg = message_of<lucid::InvalidArgument>([&] { lucid::add(a, b); });
  CHECK(msg.find("[2, 3]") != std::string::npos);
  CHECK(msg.find("[4, 5]") != std::string::npos);
  try {
    lucid::add(a, b);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == msg);
  }
}

TEST_CASE("devices: cpu always, others reported by availability") {
  CHECK(lucid::device_available(lucid::DeviceType::CPU));
  CHECK(lucid::parse_device("cpu") == lucid::Device{});
  CHECK(lucid::parse_device("cuda:1").index == 1);
  const int n = lucid::cpu::num_threads();
  CHECK(n >= 1);
  lucid::cpu::set_num_threads(1);
  CHECK(lucid::cpu::num_threads() == 1);
  lucid::cpu::set_num_threads(n);
}

TEST_CASE("random: seeded draws reproduce") {
  lucid::manual_seed(123);
  const auto first = values(lucid::randn({5}));
  lucid::manual_seed(123);
  CHECK(values(lucid::randn({5})) == first);
  CHECK(lucid::initial_seed() == 123);
}

TEST_CASE("autograd: backward accumulates gradients into leaves") {
  Tensor x = lucid::from_vector<float>({1, 2, 3});
  x.set_requires_grad(true);
  Tensor y = lucid::sum(x * x * 3.0);  // dy/dx = 6x
  CHECK(y.requires_grad());
  CHECK(!y.is_leaf());
  lucid::autograd::backward(y);
  CHECK(values(x.grad()) == std::vector<double>{6, 12, 18});
  lucid::autograd::backward(lucid::sum(x));  // accumulates
  CHECK(values(x.grad()) == std::vector<double>{7, 13, 19});

  Tensor z = x * 2.0;
  CHECK(message_of<lucid::Error>([&] { lucid::autograd::backward(z); }) ==
        "grad can be implicitly created only for scalar outputs");
  lucid::autograd::backward(z, lucid::ones({3}));
  CHECK(values(x.grad()) == std::vector<double>{9, 15, 21});
}

TEST_CASE("autograd: grad() and grad mode") {
  Tensor w = lucid::from_vector<float>({2, -1});
  w.set_requires_grad(true);
  Tensor out = lucid::sum(lucid::relu(w) * 5.0);
  auto g = lucid::autograd::grad({out}, {w});
  REQUIRE(g.size() == 1);
  CHECK(values(g[0]) == std::vector<double>{5, 0});
  CHECK(!w.grad().defined());  // grad() leaves .grad alone
  {
    lucid::autograd::NoGradGuard no_grad;
    CHECK(!lucid::autograd::GradMode::is_enabled());
    CHECK(!(w * 2.0).requires_grad());
  }
  CHECK(lucid::autograd::GradMode::is_enabled());
  CHECK((w * 2.0).requires_grad());
}

TEST_CASE("graph: a hand-written trace compiles and runs through the cache") {
  lucid::graph::GraphTracer tracer;
  Tensor in, out;
  {
    lucid::graph::TraceScope scope(&tracer);
    in = tracer.add_input({{3}, lucid::DType::Float32, {}});
    Tensor lr = tracer.add_feed({{}, lucid::DType::Float64, {}});
    CHECK(in.is_symbolic());
    out = lucid::exp(in) * lucid::cast(lr, lucid::DType::Float32);
    tracer.add_output(out);
  }
  CHECK_THROWS_AS(lucid::to_vector<float>(out), lucid::Error);  // symbolic: no data
  CHECK(tracer.graph().dump().find("exp") != std::string::npos);
  auto exe = lucid::graph::compile(tracer.take_graph(), {}, lucid::DeviceType::CPU);
  CHECK(exe->num_scalar_feeds() == 1);

  Tensor x = lucid::from_vector<float>({0, 1, 2});
  auto res = exe->run({x}, {2.0});
  check_close(res.at(0), lucid::exp(x) * 2.0);
  CHECK_THROWS_AS(exe->run({lucid::ones({4})}, {2.0}), lucid::InvalidArgument);
  CHECK(message_of<lucid::InvalidArgument>([&] { exe->run({lucid::ones({4})}, {2.0}); }) ==
        "compiled step: argument 0 has shape [4], expected [3]");
  CHECK(message_of<lucid::TypeError>([&] { exe->run({lucid::ones({3}, lucid::DType::Float64)}, {2.0}); }) ==
        "compiled step: argument 0 has dtype float64, expected float32");
}

TEST_CASE("graph: primitives are equal exactly when their attributes are") {
  // Common-subexpression elimination merges nodes by equals()/hash(): a
  // constant compares by its bits, and a node equals its copy (NaN too).
  const lucid::TensorMeta m{{2, 3}, lucid::DType::Float32, {}};
  const double nan = std::nan("");
  CHECK(lucid::Full(m, 0.5, 0).equals(lucid::Full(m, 0.5, 0)));
  CHECK(lucid::Full(m, 0.5, 0).hash() == lucid::Full(m, 0.5, 0).hash());
  CHECK_FALSE(lucid::Full(m, 0.0, 0).equals(lucid::Full(m, -0.0, 0)));
  CHECK_FALSE(lucid::Full(m, 0.0, 0).equals(lucid::Full(m, 0.0, 1)));
  CHECK_FALSE(lucid::Full(m, 0.0, 0).equals(lucid::Full({{2, 3}, lucid::DType::Float64, {}}, 0.0, 0)));
  CHECK(lucid::Full(m, nan, 0).equals(lucid::Full(m, nan, 0)));
  CHECK(lucid::Full(m, nan, 0).hash() == lucid::Full(m, nan, 0).hash());
  CHECK_FALSE(lucid::Arange(0.0, 1.0, m).equals(lucid::Arange(-0.0, 1.0, m)));
  CHECK(lucid::LayerNorm(1, nan).equals(lucid::LayerNorm(1, nan)));
  CHECK_FALSE(lucid::Im2Col({}, 0.0).equals(lucid::Im2Col({}, -0.0)));
  lucid::Window2d padded;
  padded.pad_right = 1;
  CHECK_FALSE(lucid::MaxPool2d({}).equals(lucid::MaxPool2d(padded)));
  CHECK(lucid::Matmul(true, false).equals(lucid::Matmul(true, false)));
  CHECK_FALSE(lucid::Matmul(true, false).equals(lucid::Matmul(false, true)));
  CHECK_FALSE(lucid::Matmul().equals(lucid::Unary(lucid::UnaryOp::Exp)));
  const lucid::Layout row{{2}, {1}, 0};
  CHECK_FALSE(lucid::ViewScatter(row, row, 4).equals(lucid::ViewScatter(row, row, 5)));
  CHECK_FALSE(lucid::AsStrided(row).equals(lucid::AsStrided({{2}, {1}, 1})));
  CHECK_FALSE(lucid::Slice({{0}, {2}, {1}}).equals(lucid::Slice({{0}, {3}, {1}})));
  CHECK_FALSE(lucid::Gather(0, "nll_loss").equals(lucid::Gather(0)));
  // A strided view's name only labels it: one geometry is one view.
  CHECK(lucid::StridedView("diagonal", {2}, {{1, 1}}, {0, 0}).equals(lucid::StridedView("unfold", {2}, {{1, 1}}, {0, 0})));
}
