// Trains a small MLP classifier on synthetic data with a fused training step
// (forward + loss + backward + Adam update as one executable per call),
// prints the loss falling, and saves a checkpoint that Python reads:
//
//   ck = lucid.load("mlp.lucid")
//   model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
//   model.load_state_dict(ck["model"])
//   opt = lucid.optim.Adam(model.parameters(), lr=1e-2)
//   opt.load_state_dict(ck["optimizer"])      # resumes where C++ stopped
//
// Usage: train_mlp [checkpoint path] [steps]
#include <lucid/lucid.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using lucid::Tensor;

// nn.Linear's layout and initialisation: weight [out, in] and bias [out],
// uniform in +-1/sqrt(in).
struct Linear {
  Tensor weight, bias;
  Linear(int64_t in, int64_t out) {
    const double bound = 1.0 / std::sqrt(double(in));
    weight = lucid::rand({out, in}) * (2 * bound) - bound;
    bias = lucid::rand({out}) * (2 * bound) - bound;
    weight.set_requires_grad(true);
    bias.set_requires_grad(true);
  }
  Tensor operator()(const Tensor& x) const { return lucid::linear(x, weight, bias); }
};

struct Mlp {
  Linear fc1{8, 32}, fc2{32, 3};
  Tensor operator()(const Tensor& x) const { return fc2(lucid::relu(fc1(x))); }
  std::vector<Tensor> parameters() const { return {fc1.weight, fc1.bias, fc2.weight, fc2.bias}; }
  // Module.state_dict()'s keys for nn.Sequential(Linear, ReLU, Linear).
  lucid::Value state_dict() const {
    return lucid::state_dict({{"0.weight", fc1.weight}, {"0.bias", fc1.bias},
                              {"2.weight", fc2.weight}, {"2.bias", fc2.bias}});
  }
};

// F.cross_entropy(logits, labels) with mean reduction, from ops.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  Tensor logp = lucid::log_softmax(logits, 1);
  Tensor picked = lucid::gather(logp, 1, lucid::unsqueeze(labels, 1));
  return -lucid::mean(picked);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "mlp.lucid";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  try {
    lucid::manual_seed(0);
    // Three classes, separated by a random linear map of the inputs.
    Tensor x = lucid::randn({256, 8});
    Tensor labels = lucid::argmax(lucid::matmul(x, lucid::randn({8, 3})), 1);

    Mlp model;
    lucid::optim::Optimizer opt("adam", model.parameters(), {{"lr", 1e-2}});
    lucid::compile::FusedStep step(
        [&](const std::vector<Tensor>& in) { return cross_entropy(model(in[0]), in[1]); }, opt);

    double loss = 0;
    for (int i = 1; i <= steps; ++i) {
      loss = lucid::item(step({x, labels})).to_double();
      if (i == 1 || i % 20 == 0) std::printf("step %4d  loss %.6f\n", i, loss);
    }
    // The trained model, evaluated eagerly (the last step's loss was computed
    // before its update).
    double eval_loss, accuracy;
    {
      lucid::autograd::NoGradGuard no_grad;
      Tensor logits = model(x);
      eval_loss = lucid::item(cross_entropy(logits, labels)).to_double();
      accuracy = lucid::item(lucid::mean(lucid::cast(lucid::eq(lucid::argmax(logits, 1), labels),
                                                     lucid::DType::Float32))).to_double();
    }
    const auto info = step.cache_info();
    std::printf("trained: loss %.6f, accuracy %.3f, %llu compile(s), %.3f s compiling\n", eval_loss, accuracy,
                (unsigned long long)info.misses, info.compile_seconds);

    lucid::save(lucid::Value::dict({{"model", model.state_dict()},
                                    {"optimizer", opt.state_dict()},
                                    {"data", lucid::Value::dict({{"x", x}, {"labels", labels}})},
                                    {"steps", steps},
                                    {"eval_loss", eval_loss}}),
                path);
    std::printf("saved %s\n", path.c_str());
  } catch (const lucid::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
