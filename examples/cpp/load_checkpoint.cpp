// Loads a checkpoint written from Python and runs the model it holds:
//
//   model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
//   lucid.save({"model": model.state_dict(), "input": lucid.randn(5, 4)}, "mlp.lucid")
//
// The file holds a state_dict of Linear layers (alternating with ReLU, as in
// nn.Sequential), either alone or as "model" next to an "input" batch. The
// program lists the tensors, then prints model(input), one row per line.
//
// Usage: load_checkpoint PATH
#include <lucid/lucid.h>

#include <cstdio>
#include <string>
#include <vector>

using lucid::Tensor;
using lucid::Value;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CHECKPOINT\n", argv[0]);
    return 2;
  }
  try {
    const Value ck = lucid::load(argv[1]);
    const bool wrapped = ck.kind() == Value::Kind::Dict && ck.find("model") != nullptr;
    const Value& sd = wrapped ? ck["model"] : ck;

    // Linear layers in key order: "<k>.weight" [out, in] and "<k>.bias".
    std::vector<std::pair<Tensor, Tensor>> layers;
    for (const auto& [key, value] : sd.items()) {
      const Tensor& t = value.tensor();
      std::printf("%-12s %-10s %s\n", key.string().c_str(), lucid::shape_str(t.shape()).c_str(),
                  lucid::dtype_name(t.dtype()));
      const std::string& name = key.string();
      if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) layers.push_back({t, Tensor()});
      else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0 && !layers.empty())
        layers.back().second = t;
    }
    if (layers.empty()) {
      std::fprintf(stderr, "error: %s holds no '<layer>.weight' tensors\n", argv[1]);
      return 1;
    }

    Tensor x = wrapped && ck.find("input") ? ck["input"].tensor()
                                           : lucid::ones({1, layers.front().first.dim(1)});
    lucid::autograd::NoGradGuard no_grad;
    for (size_t k = 0; k < layers.size(); ++k) {
      x = lucid::linear(x, layers[k].first, layers[k].second);
      if (k + 1 < layers.size()) x = lucid::relu(x);
    }
    const std::vector<float> out = lucid::to_vector<float>(x);
    const int64_t cols = x.dim(-1);
    std::printf("output %s\n", lucid::shape_str(x.shape()).c_str());
    for (int64_t r = 0; r < x.numel() / cols; ++r) {
      for (int64_t c = 0; c < cols; ++c) std::printf(c ? " %.9g" : "%.9g", out[size_t(r * cols + c)]);
      std::printf("\n");
    }
  } catch (const lucid::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
