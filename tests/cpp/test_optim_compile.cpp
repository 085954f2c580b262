// The engine optimizers and the compiled steps: a FusedStep and a
// CompiledOptimizer match the eager loop they replace, step for step.
#include <unistd.h>

#include <cstdio>
#include <map>

#include "helpers.h"

using lucid::Tensor;
using lucid::compile::CompiledOptimizer;
using lucid::compile::FusedStep;
using lucid::optim::Optimizer;
using lucid::optim::Options;
using lucid_test::check_close;
using lucid_test::check_equal;
using lucid_test::message_of;
using lucid_test::values;

namespace {

// A two-layer MLP with an unused parameter (never gets a gradient).
struct Net {
  Tensor w1, b1, w2, b2, unused;
  explicit Net(uint64_t seed) {
    lucid::manual_seed(seed);
    w1 = lucid::randn({16, 4}) * 0.5;
    b1 = lucid::randn({16}) * 0.1;
    w2 = lucid::randn({2, 16}) * 0.5;
    b2 = lucid::randn({2}) * 0.1;
    unused = lucid::randn({3});
    for (Tensor* p : {&w1, &b1, &w2, &b2, &unused}) p->set_requires_grad(true);
  }
  std::vector<Tensor> params() const { return {w1, b1, w2, b2, unused}; }
  Tensor loss(const Tensor& x, const Tensor& y) const {
    Tensor out = lucid::linear(lucid::tanh(lucid::linear(x, w1, b1)), w2, b2);
    return lucid::mean(lucid::square(out - y));
  }
};

struct Batch {
  Tensor x, y;
};
Batch batch(uint64_t seed, int64_t n = 8) {
  lucid::manual_seed(seed);
  return {lucid::randn({n, 4}), lucid::randn({n, 2})};
}

Tensor eager_step(Optimizer& opt, const Net& net, const Batch& b) {
  opt.zero_grad();
  Tensor loss = net.loss(b.x, b.y);
  lucid::autograd::backward(loss);
  opt.step();
  return loss;
}

void check_same_state(const Optimizer& a, const Optimizer& b) {
  REQUIRE(a.num_groups() == b.num_groups());
  for (size_t g = 0; g < a.num_groups(); ++g) {
    for (size_t i = 0; i < a.engine(g).num_params(); ++i) {
      const auto ea = a.engine(g).state_entries(i), eb = b.engine(g).state_entries(i);
      REQUIRE(ea.size() == eb.size());
      for (size_t k = 0; k < ea.size(); ++k) {
        INFO("group ", g, " param ", i, " state ", ea[k].first);
        CHECK(ea[k].first == eb[k].first);
        check_close(ea[k].second, eb[k].second);
      }
    }
  }
}

const std::vector<std::pair<std::string, Options>>& configurations() {
  static const std::vector<std::pair<std::string, Options>> c = {
      {"sgd", {{"lr", 0.1}}},
      {"sgd", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 1e-2}}},
      {"adam", {{"lr", 1e-2}}},
      {"adam", {{"lr", 1e-2}, {"amsgrad", true}, {"weight_decay", 0.1}, {"maximize", true}}},
      {"adamw", {{"lr", 1e-2}, {"betas", {0.8, 0.99}}}},
      {"rmsprop", {{"lr", 1e-2}, {"centered", true}, {"momentum", 0.5}}},
      {"adagrad", {{"lr", 0.1}, {"lr_decay", 1e-3}}},
      {"adadelta", {}},
      {"adamax", {}},
      {"nadam", {}},
      {"radam", {}},
      {"asgd", {{"t0", 2.0}}},
      {"rprop", {}},
  };
  return c;
}

}  // namespace

TEST_CASE("optimizer: torch's defaults, param groups and validation") {
  Net net(0);
  Optimizer opt("adam", std::vector<lucid::optim::ParamGroup>{{{net.w1, net.b1}, {{"lr", 0.1}}}, {{net.w2}, {}}},
                {{"lr", 1e-2}});
  CHECK(opt.kind() == "adam");
  CHECK(opt.num_groups() == 2);
  CHECK(opt.lr(0) == 0.1);
  CHECK(opt.lr(1) == 1e-2);  // the optimizer's default, overridden at construction
  CHECK(opt.param_group(1).options.at("betas").values == std::vector<double>{0.9, 0.999});
  CHECK(opt.param_group(1).options.at("eps").number() == 1e-8);
  opt.add_param_group({{net.b2}, {{"weight_decay", 0.5}}});
  CHECK(opt.num_groups() == 3);
  CHECK(opt.params().size() == 4);
  opt.set_lr(0.3);
  CHECK(opt.lr(2) == 0.3);

  CHECK(message_of<lucid::InvalidArgument>([&] { opt.add_param_group({{net.w1}, {}}); }) ==
        "some parameters appear in more than one parameter group");
  CHECK(message_of<lucid::InvalidArgument>([&] { Optimizer("sgd", std::vector<Tensor>{net.w1}, {{"lr", -1}}); }) ==
        "Invalid learning rate: -1");
  CHECK(message_of<lucid::InvalidArgument>([&] { Optimizer("adam", std::vector<Tensor>{net.w1}, {{"lr", -0.5}}); }) ==
        "Invalid learning rate: -0.5");
  CHECK(message_of<lucid::InvalidArgument>([&] { Optimizer("sgd", std::vector<Tensor>{}); }) ==
        "optimizer got an empty parameter list");
  CHECK(message_of<lucid::InvalidArgument>([&] { Optimizer("sgd", std::vector<Tensor>{net.w1 * 2.0}); }) ==
        "can't optimize a non-leaf Tensor");
  CHECK(message_of<lucid::InvalidArgument>([&] { Optimizer("lamb", std::vector<Tensor>{net.w1}); }) ==
        "no engine optimizer named 'lamb'");
  CHECK_THROWS_AS(Optimizer("sgd", std::vector<Tensor>{lucid::ones({2}, lucid::DType::Int64)}), lucid::TypeError);
}

TEST_CASE("optimizer: eager SGD step by hand, skipped parameters, zero_grad") {
  Tensor p = lucid::from_vector<float>({1, 2});
  Tensor q = lucid::from_vector<float>({5});
  p.set_requires_grad(true);
  q.set_requires_grad(true);
  Optimizer opt("sgd", {p, q}, {{"lr", 0.5}});
  lucid::autograd::backward(lucid::sum(p * p));  // grad 2p
  opt.step();
  CHECK(values(p) == std::vector<double>{0, 0});
  CHECK(values(q) == std::vector<double>{5});  // no gradient: untouched
  CHECK(!opt.engine(0).has_state(1));
  opt.zero_grad();
  CHECK(!p.grad().defined());
  // a bad edit is caught before anything changes
  opt.param_group(0).options["lr"] = -1.0;
  lucid::autograd::backward(lucid::sum(p + 1.0));
  CHECK_THROWS_AS(opt.step(), lucid::InvalidArgument);
  CHECK(values(p) == std::vector<double>{0, 0});
}

TEST_CASE("fused step matches the eager loop for every engine optimizer") {
  const Batch b = batch(7);
  for (const auto& [kind, options] : configurations()) {
    CAPTURE(kind);
    Net eager_net(1), fused_net(1);
    Optimizer eager(kind, eager_net.params(), options);
    Optimizer fused(kind, fused_net.params(), options);
    FusedStep step([&](const std::vector<Tensor>& in) { return fused_net.loss(in[0], in[1]); }, fused);
    for (int i = 0; i < 4; ++i) {
      Tensor le = eager_step(eager, eager_net, b);
      Tensor lf = step({b.x, b.y});
      check_close(lf, le);
    }
    const auto pe = eager_net.params(), pf = fused_net.params();
    for (size_t k = 0; k < pe.size(); ++k) check_close(pf[k], pe[k]);
    check_same_state(fused, eager);
    // the unused parameter gets no gradient, so no state (but torch's Adagrad
    // creates every state at construction)
    CHECK(fused.engine(0).has_state(4) == (kind == "adagrad"));
    CHECK(step.cache_info().misses == 1);
    CHECK(step.cache_info().hits == 3);
    CHECK(step.cache_info().last_miss == "first call");
  }
}

TEST_CASE("fused step: one executable per call, live hyper-parameters, recompiles on a new signature") {
  Net eager_net(2), fused_net(2);
  Optimizer eager("adam", std::vector<lucid::optim::ParamGroup>{{{eager_net.w1, eager_net.b1}, {{"lr", 0.05}}},
                                                                {{eager_net.w2, eager_net.b2}, {}}});
  Optimizer fused("adam", std::vector<lucid::optim::ParamGroup>{{{fused_net.w1, fused_net.b1}, {{"lr", 0.05}}},
                                                                {{fused_net.w2, fused_net.b2}, {}}});
  FusedStep step([&](const std::vector<Tensor>& in) { return fused_net.loss(in[0], in[1]); }, fused);
  const Batch b = batch(3), big = batch(4, 16);

  const uint64_t runs = lucid::graph::Executable::run_count();
  check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
  // a cached call is one executable run and no eager op
  const uint64_t dispatched = lucid::eager_dispatch_count();
  Tensor cached = step({b.x, b.y});
  CHECK(lucid::eager_dispatch_count() == dispatched);
  CHECK(lucid::graph::Executable::run_count() - runs == 2);
  check_close(cached, eager_step(eager, eager_net, b));

  // an LR schedule: edits are feeds, no recompilation
  eager.set_lr(0.002);
  fused.set_lr(0.002);
  check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
  CHECK(step.cache_info().misses == 1);

  // a new input shape compiles a second executable, the first stays cached
  check_close(step({big.x, big.y}), eager_step(eager, eager_net, big));
  CHECK(step.cache_info().misses == 2);
  CHECK(step.cache_info().entries == 2);
  CHECK(step.cache_info().last_miss == "input 0 shape [8, 4] -> [16, 4]; input 1 shape [8, 2] -> [16, 2]");
  check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
  CHECK(step.cache_info().misses == 2);

  const auto pe = eager_net.params(), pf = fused_net.params();
  for (size_t k = 0; k < pe.size(); ++k) check_close(pf[k], pe[k]);
  check_same_state(fused, eager);
}

TEST_CASE("fused step: bad calls throw before anything runs") {
  Net net(5);
  Optimizer opt("adam", net.params(), {{"lr", 0.01}});
  FusedStep step([&](const std::vector<Tensor>& in) { return net.loss(in[0], in[1]); }, opt);
  const Batch b = batch(1);
  step({b.x, b.y});
  const auto before = values(net.w1);
  const double step_count = opt.engine(0).state(0).step;

  // a new input dtype is a new signature: the trace fails where the eager step would
  CHECK(message_of<lucid::TypeError>([&] { step({lucid::cast(b.x, lucid::DType::Float64), b.y}); }) ==
        "expected m1 and m2 to have the same dtype, but got: float64 != float32");
  CHECK(!net.w1.grad().defined());
  CHECK(message_of<lucid::TypeError>([&] { step({}); }) == "a compiled step needs at least one tensor argument");
  opt.param_group(0).options["betas"] = {0.9, 1.5};
  CHECK(message_of<lucid::InvalidArgument>([&] { step({b.x, b.y}); }) == "Invalid beta parameter at index 1: 1.5");
  opt.param_group(0).options["betas"] = {0.9, 0.999};
  CHECK(values(net.w1) == before);
  CHECK(opt.engine(0).state(0).step == step_count);
  step({b.x, b.y});
  CHECK(opt.engine(0).state(0).step == step_count + 1);

  FusedStep not_scalar([&](const std::vector<Tensor>& in) { return in[0] * 2.0; }, opt);
  CHECK(message_of<lucid::Error>([&] { not_scalar({b.x}); }) ==
        "the step function must return a scalar tensor to compile a training step");
  CHECK(values(net.w1) != before);
  CHECK(!net.w1.grad().defined());  // tracing left the real gradients as they were
}

TEST_CASE("fused step: a step the GradScaler skips creates no state; the first step taken does, from its lr") {
  const std::vector<std::pair<std::string, Options>> kinds = {
      {"adam", {{"lr", 0.01}}}, {"sgd", {{"lr", 0.05}, {"momentum", 0.9}}}, {"rprop", {{"lr", 0.01}}},
      {"asgd", {{"lr", 0.01}}}, {"nadam", {{"lr", 0.01}}}};
  for (const auto& [kind, options] : kinds) {
    INFO(kind);
    Net net(7), eager_net(7);
    Optimizer opt(kind, net.params(), options), eager(kind, eager_net.params(), options);
    lucid::compile::GradScalerState scaler(65536.0);
    lucid::compile::StepOptions so;
    so.grad_scaler = &scaler;
    FusedStep step([&](const std::vector<Tensor>& in) { return net.loss(in[0], in[1]); }, opt, so);
    const Batch b = batch(2);
    step({b.x, b.y * 1e36});  // the scaled gradients overflow: the step is skipped
    CHECK(scaler.get_scale() == 32768.0);
    for (size_t i = 0; i < net.params().size(); ++i) CHECK(!opt.engine(0).has_state(i));
    CHECK(opt.state_dict()["state"].size() == 0);
    // the first step taken starts the state from its own lr (Rprop's
    // step_size, ASGD's eta), as the eager step with that lr does
    opt.set_lr(0.002);
    eager.set_lr(0.002);
    check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
    check_same_state(opt, eager);
    check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
    check_same_state(opt, eager);
    CHECK(opt.engine(0).state(0).step == eager.engine(0).state(0).step);
    const auto pe = eager_net.params(), pf = net.params();
    for (size_t k = 0; k < pe.size(); ++k) check_close(pf[k], pe[k]);
    CHECK(step.cache_info().misses == 1);  // creating the state retraced nothing
  }
}

TEST_CASE("fused step: frozen parameters and engines given directly") {
  Net eager_net(9), fused_net(9);
  eager_net.b2.set_requires_grad(false);
  fused_net.b2.set_requires_grad(false);
  const Options o{{"lr", 0.1}, {"momentum", 0.9}};
  lucid::optim::Hyper h = lucid::optim::to_hyper([&] {
    Options full = lucid::optim::default_options("sgd");
    for (const auto& [k, v] : o) full.insert_or_assign(k, v);
    return full;
  }());
  lucid::optim::EngineOptimizer engine("sgd", {fused_net.w1, fused_net.b1, fused_net.w2}, h, h);
  FusedStep step([&](const std::vector<Tensor>& in) { return fused_net.loss(in[0], in[1]); },
                 fused_net.params(), {{&engine, &h}});
  Optimizer eager("sgd", {eager_net.w1, eager_net.b1, eager_net.w2}, o);
  const Batch b = batch(2);
  const auto frozen = values(fused_net.b2);
  for (int i = 0; i < 3; ++i) check_close(step({b.x, b.y}), eager_step(eager, eager_net, b));
  check_close(fused_net.w1, eager_net.w1);
  check_close(fused_net.w2, eager_net.w2);
  CHECK(values(fused_net.b2) == frozen);

  // every optimized parameter must be one the step knows
  lucid::optim::EngineOptimizer stray("sgd", {lucid::ones({2}).set_requires_grad(true)}, h, h);
  FusedStep bad([&](const std::vector<Tensor>& in) { return fused_net.loss(in[0], in[1]); }, fused_net.params(),
                {{&stray, &h}});
  CHECK_THROWS_AS(bad({b.x, b.y}), lucid::Error);
}

TEST_CASE("compiled optimizer matches the eager step") {
  for (const auto& [kind, options] : configurations()) {
    CAPTURE(kind);
    Net eager_net(4), compiled_net(4);
    Optimizer eager(kind, eager_net.params(), options);
    Optimizer inner(kind, compiled_net.params(), options);
    CompiledOptimizer compiled(inner);
    for (int i = 0; i < 3; ++i) {
      const Batch b = batch(10 + i);
      eager_step(eager, eager_net, b);
      inner.zero_grad();
      lucid::autograd::backward(compiled_net.loss(b.x, b.y));
      compiled.step();
    }
    const auto pe = eager_net.params(), pc = compiled_net.params();
    for (size_t k = 0; k < pe.size(); ++k) check_close(pc[k], pe[k]);
    check_same_state(inner, eager);
    CHECK(compiled.cache_info().misses == 1);
  }
}

TEST_CASE("eager and compiled steps share the optimizer state") {
  Net a(6), b(6);
  Optimizer oa("adam", a.params()), ob("adam", b.params());
  FusedStep step([&](const std::vector<Tensor>& in) { return b.loss(in[0], in[1]); }, ob);
  const Batch d = batch(8);
  for (int i = 0; i < 2; ++i) {
    eager_step(oa, a, d);
    eager_step(ob, b, d);  // eager first...
  }
  for (int i = 0; i < 2; ++i) check_close(step({d.x, d.y}), eager_step(oa, a, d));  // ...then fused
  check_same_state(ob, oa);
  CHECK(ob.engine(0).state(0).step == 4);
}

TEST_CASE("optimizer state_dict: save, load into a fresh optimizer, resume exactly") {
  const Batch d = batch(11);
  Net a(12), b(12);
  Optimizer oa("adam", std::vector<lucid::optim::ParamGroup>{{{a.w1, a.b1}, {{"lr", 0.02}}}, {{a.w2, a.b2}, {}}},
               {{"amsgrad", true}});
  for (int i = 0; i < 3; ++i) eager_step(oa, a, d);

  const std::string path = "/tmp/lucid_cpp_test_optim_" + std::to_string(::getpid()) + ".lucid";
  lucid::Value sd = oa.state_dict();
  CHECK(sd["param_groups"][0]["lr"].number() == 0.02);
  CHECK(sd["param_groups"][0]["amsgrad"].boolean());
  CHECK(sd["param_groups"][1]["betas"].kind() == lucid::Value::Kind::Tuple);
  CHECK(sd["param_groups"][1]["params"] == lucid::Value::list({2, 3}));
  CHECK(sd["state"][0]["step"].tensor().numel() == 1);
  CHECK(sd["state"].find(4) == nullptr);  // the unused parameter has no state
  lucid::save(lucid::Value::dict({{"model", lucid::state_dict({{"w1", a.w1}, {"b1", a.b1}, {"w2", a.w2}, {"b2", a.b2}})},
                                  {"optimizer", sd}}),
              path);

  const lucid::Value ck = lucid::load(path);
  std::remove(path.c_str());
  for (auto [dst, name] : std::vector<std::pair<Tensor*, const char*>>{{&b.w1, "w1"}, {&b.b1, "b1"}, {&b.w2, "w2"}, {&b.b2, "b2"}}) {
    lucid::autograd::NoGradGuard no_grad;
    lucid::copy_(*dst, ck["model"][name].tensor());
  }
  Optimizer ob("adam", std::vector<lucid::optim::ParamGroup>{{{b.w1, b.b1}, {}}, {{b.w2, b.b2}, {}}});
  ob.load_state_dict(ck["optimizer"]);
  CHECK(ob.lr(0) == 0.02);
  check_same_state(ob, oa);
  for (int i = 0; i < 2; ++i) check_close(eager_step(ob, b, d), eager_step(oa, a, d));
  check_close(b.w1, a.w1);

  Optimizer one_group("adam", {b.w1});
  CHECK(message_of<lucid::InvalidArgument>([&] { one_group.load_state_dict(ck["optimizer"]); }) ==
        "loaded state dict has a different number of parameter groups");
  lucid::Value bad = ck["optimizer"];
  bad.set("param_groups", lucid::Value::list({ck["optimizer"]["param_groups"][0], ck["optimizer"]["param_groups"][0]}));
  CHECK(message_of<lucid::InvalidArgument>([&] { ob.load_state_dict(bad); }) ==
        "loaded state dict has state for parameter 2, which no parameter group lists");
  CHECK(ob.lr(0) == 0.02);  // a failed load changes nothing
}
