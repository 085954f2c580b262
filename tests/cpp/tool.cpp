// A command-line driver for tests/test_cpp_api.py, which checks the C++ API
// against Python:
//   lucid_cpp_tool defaults          torch's default options per kind, as JSON
//   lucid_cpp_tool roundtrip IN OUT  load IN (written by lucid.save), save OUT
//   lucid_cpp_tool errors            one line per error case: name, kind, message
//   lucid_cpp_tool train IN OUT      train the MLP that IN describes (written by
//                                    lucid.save), save its losses, parameters and
//                                    optimizer state to OUT
// An exception ends the program with "<Python exception name>: <message>".
#include <lucid/lucid.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using lucid::Tensor;

namespace {

// The Python exception each core error becomes (csrc/python/errors.cpp).
template <class F>
bool report(F&& fn, std::string& kind, std::string& message) {
  try {
    fn();
    return false;
  } catch (const lucid::CheckpointError& e) {
    kind = "CheckpointError", message = e.what();
  } catch (const lucid::InvalidArgument& e) {
    kind = "InvalidArgument", message = e.what();
  } catch (const lucid::TypeError& e) {
    kind = "TypeError", message = e.what();
  } catch (const lucid::IndexError& e) {
    kind = "IndexError", message = e.what();
  } catch (const lucid::NotImplementedError& e) {
    kind = "NotImplementedError", message = e.what();
  } catch (const lucid::Error& e) {
    kind = "RuntimeError", message = e.what();
  }
  return true;
}

void print_defaults() {
  const char* kinds[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta",
                         "adamax", "nadam", "radam", "asgd", "rprop"};
  std::printf("{");
  bool first_kind = true;
  for (const char* kind : kinds) {
    std::printf("%s\"%s\": {", first_kind ? "" : ", ", kind);
    first_kind = false;
    bool first = true;
    for (const auto& [key, v] : lucid::optim::default_options(kind)) {
      std::printf("%s\"%s\": ", first ? "" : ", ", key.c_str());
      first = false;
      if (v.values.size() != 1) std::printf("[");
      for (size_t k = 0; k < v.values.size(); ++k)
        std::printf("%s%s", k ? ", " : "",
                    v.integral[k] ? std::to_string(int64_t(v.values[k])).c_str()
                                  : lucid::optim::py_float_repr(v.values[k]).c_str());
      if (v.values.size() != 1) std::printf("]");
    }
    std::printf("}");
  }
  std::printf("}\n");
}

void print_errors() {
  Tensor p = lucid::zeros({2});
  p.set_requires_grad(true);
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"sgd_lr", [&] { lucid::optim::Optimizer("sgd", {p}, {{"lr", -1}}); }},
      {"adam_betas", [&] { lucid::optim::Optimizer("adam", {p}, {{"betas", {0.9, 1.5}}}); }},
      {"rmsprop_alpha", [&] { lucid::optim::Optimizer("rmsprop", {p}, {{"alpha", -0.5}}); }},
      {"add_shapes", [] { lucid::add(lucid::ones({2, 3}), lucid::ones({4, 5})); }},
      {"matmul_shapes", [] { lucid::matmul(lucid::ones({2, 3}), lucid::ones({4, 5})); }},
      {"backward_non_scalar", [&] { lucid::autograd::backward(p * 2.0); }},
      {"item_many", [] { lucid::item(lucid::ones({3})); }},
      {"step_dtype", [&] {
         Tensor w = lucid::zeros({2, 2});
         w.set_requires_grad(true);
         lucid::optim::Optimizer opt("sgd", {w}, {{"lr", 0.1}});
         lucid::compile::FusedStep step(
             [&](const std::vector<Tensor>& in) { return lucid::sum(lucid::square(lucid::matmul(in[0], w))); }, opt);
         step({lucid::ones({1, 2})});
         step({lucid::ones({1, 2}, lucid::DType::Float64)});
       }},
  };
  for (const auto& [name, fn] : cases) {
    std::string kind = "none", message;
    report(fn, kind, message);
    std::printf("%s\t%s\t%s\n", name, kind.c_str(), message.c_str());
  }
}

// The run test_cpp_api.py repeats in Python: Linear -> ReLU -> Linear on the
// parameters IN holds, cross-entropy written as log_softmax + gather + mean,
// `steps` steps of the optimizer `kind` with `options`, as one FusedStep per
// call ("fused") or as zero_grad / backward / step ("eager").
void train(const std::string& in, const std::string& out) {
  const lucid::Value spec = lucid::load(in);
  std::vector<Tensor> params;
  for (const lucid::Value& v : spec["params"].elements()) {
    Tensor p = v.tensor();
    p.set_requires_grad(true);
    params.push_back(p);
  }
  lucid::optim::Options options;
  for (const auto& [key, v] : spec["options"].items()) {
    if (auto option = lucid::optim::OptionValue::from_value(v)) options[key.string()] = *option;
  }
  lucid::optim::Optimizer opt(spec["kind"].string(), params, options);
  const Tensor& x = spec["x"].tensor();
  const Tensor& labels = spec["labels"].tensor();
  auto loss_of = [&](const Tensor& inputs, const Tensor& targets) {
    Tensor h = lucid::relu(lucid::linear(inputs, params[0], params[1]));
    Tensor logp = lucid::log_softmax(lucid::linear(h, params[2], params[3]), 1);
    return -lucid::mean(lucid::gather(logp, 1, lucid::unsqueeze(targets, 1)));
  };
  std::unique_ptr<lucid::compile::FusedStep> step;
  if (spec["mode"].string() == "fused")
    step = std::make_unique<lucid::compile::FusedStep>(
        [&](const std::vector<Tensor>& a) { return loss_of(a[0], a[1]); }, opt);
  std::vector<lucid::Value> losses;
  for (int64_t i = 0; i < spec["steps"].integer(); ++i) {
    Tensor loss;
    if (step) {
      loss = (*step)({x, labels});
    } else {
      opt.zero_grad();
      loss = loss_of(x, labels);
      lucid::autograd::backward(loss);
      opt.step();
    }
    losses.push_back(lucid::Value(loss));
  }
  std::vector<lucid::Value> trained(params.begin(), params.end());
  lucid::save(lucid::Value::dict({{"losses", lucid::Value::list(losses)},
                                  {"params", lucid::Value::list(trained)},
                                  {"optimizer", opt.state_dict()}}),
              out);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  std::string kind, message;
  const bool failed = report([&] {
    if (cmd == "defaults") {
      print_defaults();
    } else if (cmd == "roundtrip" && argc == 4) {
      const lucid::Value v = lucid::load(argv[2]);
      lucid::save(v, argv[3]);
      std::printf("%s\n", v.repr().c_str());
    } else if (cmd == "errors") {
      print_errors();
    } else if (cmd == "train" && argc == 4) {
      train(argv[2], argv[3]);
    } else {
      throw lucid::InvalidArgument("usage: lucid_cpp_tool defaults | roundtrip IN OUT | errors | train IN OUT");
    }
  }, kind, message);
  if (failed) {
    std::printf("%s: %s\n", kind.c_str(), message.c_str());
    return 3;
  }
  return 0;
}
