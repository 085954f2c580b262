// Checkpoints: Value, save() and load() in lucid.save's format. The Python
// side of the format (files from and for lucid.save / lucid.load) is checked
// by tests/test_cpp_api.py.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>

#include "helpers.h"

using lucid::Tensor;
using lucid::Value;
using lucid_test::message_of;
using lucid_test::values;

namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/lucid_cpp_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

}  // namespace

TEST_CASE("Value: kinds, access and value semantics") {
  Value d = Value::dict();
  d.set("a", 1);
  d.set(2, Value::list({1.5, "x", Value()}));
  d.set(Value::tuple({1, "k"}), true);
  CHECK(d.size() == 3);
  CHECK(d["a"].integer() == 1);
  CHECK(d[2][1].string() == "x");
  CHECK(d[2][2].is_none());
  CHECK(d[Value::tuple({1, "k"})].boolean());
  CHECK(d.find("missing") == nullptr);
  CHECK_THROWS_AS(d["missing"], lucid::IndexError);
  CHECK(message_of<lucid::TypeError>([&] { d["a"].string(); }) == "expected a str, got a int value");
  d.set("a", 5);  // replaces, keeps the position
  CHECK(d.items().front().second.integer() == 5);
  Value copy = d;
  copy.set("a", 6);
  CHECK(d["a"].integer() == 5);  // copies do not share edits
  CHECK(Value(1) == Value(1.0));
  CHECK(Value(std::nan("")) == Value(std::nan("")));
  CHECK(d.repr() == "{'a': 5, 2: [1.5, 'x', None], (1, 'k'): True}");
}

TEST_CASE("save/load: every dtype, nesting, shared tensors, special floats") {
  Tensor f32 = lucid::from_vector<float>({1.5f, -2.f, 3.25f, 0.f, 1e-8f, 7.f}, {2, 3});
  Tensor f64 = lucid::from_vector<double>({M_PI, -1e300});
  Tensor i64 = lucid::from_vector<int64_t>({int64_t(1) << 40, -3});
  Tensor i32 = lucid::from_vector<int32_t>({7, -8, 9});
  Tensor boolean = lucid::gt(i32, lucid::scalar_tensor(0, lucid::DType::Int32));
  Tensor f16 = lucid::cast(f32, lucid::DType::Float16);
  Tensor bf16 = lucid::cast(f32, lucid::DType::BFloat16);
  Tensor scalar = lucid::scalar_tensor(4.0, lucid::DType::Float32);
  Tensor empty = lucid::zeros({0, 3});
  Tensor param = lucid::randn({3});
  param.set_requires_grad(true);

  Value obj = Value::dict({{"tensors", Value::list({f32, f64, i64, i32, boolean, f16, bf16, scalar, empty})},
                           {"again", f32},  // stored once, loads as the same tensor
                           {"param", param},
                           {"numbers", Value::tuple({0, -1, int64_t(1) << 62, 0.1, 1e-8,
                                                     std::numeric_limits<double>::infinity(),
                                                     -std::numeric_limits<double>::infinity(), std::nan("")})},
                           {"text", "unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \"quoted\"\n"},
                           {"flags", Value::list({true, false, Value()})},
                           {"dtype", lucid::DType::BFloat16},
                           {"device", lucid::Device{}},
                           {"state", Value::dict({{0, Value::dict({{"step", scalar}})}})},
                           {"sd", lucid::state_dict({{"0.weight", f32}})}});
  const std::string path = temp_path("roundtrip.lucid");
  lucid::save(obj, path);
  const Value back = lucid::load(path);
  std::remove(path.c_str());

  REQUIRE(back.kind() == Value::Kind::Dict);
  CHECK(!back.ordered());
  const auto& ts = back["tensors"].elements();
  const std::vector<Tensor> originals = {f32, f64, i64, i32, boolean, f16, bf16, scalar, empty};
  REQUIRE(ts.size() == originals.size());
  for (size_t k = 0; k < ts.size(); ++k) {
    CAPTURE(k);
    const Tensor& t = ts[k].tensor();
    CHECK(t.dtype() == originals[k].dtype());
    CHECK(t.shape() == originals[k].shape());
    CHECK(values(t) == values(originals[k]));
    CHECK(!t.requires_grad());
  }
  CHECK(lucid::to_vector<int64_t>(ts[2].tensor())[0] == int64_t(1) << 40);
  CHECK(back["again"].tensor().same(ts[0].tensor()));
  CHECK(back["param"].tensor().requires_grad());
  CHECK(back["numbers"].kind() == Value::Kind::Tuple);
  CHECK(back["numbers"] == obj["numbers"]);
  CHECK(back["numbers"][0].kind() == Value::Kind::Int);
  CHECK(back["numbers"][3].kind() == Value::Kind::Float);
  CHECK(back["text"].string() == obj["text"].string());
  CHECK(back["flags"] == obj["flags"]);
  CHECK(back["dtype"].dtype() == lucid::DType::BFloat16);
  CHECK(back["device"].device() == lucid::Device{});
  CHECK(back["state"][0]["step"].tensor().numel() == 1);
  CHECK(back["sd"].ordered());
}

TEST_CASE("save: what the format cannot hold is refused before writing") {
  const std::string path = temp_path("refused.lucid");
  Value bad_key = Value::dict();
  bad_key.set(Value::list({1}), 2);
  CHECK(message_of<lucid::TypeError>([&] { lucid::save(bad_key, path); }).find("cannot save a key of obj: dict key of type list") == 0);
  Tensor sym;
  {
    lucid::graph::GraphTracer tracer;
    lucid::graph::TraceScope scope(&tracer);
    sym = tracer.add_input({{2}, lucid::DType::Float32, {}});
  }
  CHECK(message_of<lucid::TypeError>([&] { lucid::save(Value::dict({{"x", sym}}), path); }) ==
        "cannot save obj['x']: it is a traced (symbolic) tensor with no data");
  CHECK(access(path.c_str(), F_OK) != 0);
  CHECK(message_of<lucid::Error>([&] { lucid::save(1, "/no/such/dir/x.lucid"); }) ==
        "cannot save to /no/such/dir/x.lucid: directory /no/such/dir does not exist");
}

TEST_CASE("load: damaged files raise CheckpointError naming the file and the problem") {
  const std::string good = temp_path("good.lucid"), bad = temp_path("bad.lucid");
  lucid::save(Value::dict({{"w", lucid::ones({4})}}), good);
  const std::string bytes = read_file(good);
  auto error_for = [&](const std::string& content) {
    write_file(bad, content);
    return message_of<lucid::CheckpointError>([&] { lucid::load(bad); });
  };
  CHECK(error_for(bytes.substr(0, bytes.size() - 3)) ==
        bad + ": truncated file: expected " + std::to_string(bytes.size()) + " bytes, found " +
            std::to_string(bytes.size() - 3));
  CHECK(error_for(bytes + "xyz") == bad + ": 3 unexpected bytes after the end of the data");
  CHECK(error_for("LUCID") == bad + ": truncated file: 5 bytes, not even a header");
  CHECK(error_for("PK\x03\x04 zip") == bad + ": not a Lucid checkpoint: this looks like a pickle/zip file (e.g. from "
                                             "torch.save); Lucid reads only its own format");
  CHECK(error_for("hello world, this is text") ==
        bad + ": not a Lucid checkpoint (bad magic b'hello wo', expected b'LUCIDCKP')");
  std::string v2 = bytes;
  v2[8] = 2;
  CHECK(error_for(v2) == bad + ": unsupported format version 2 (this Lucid reads version 1)");
  std::string corrupt = bytes;
  corrupt[20] = '[';
  CHECK(error_for(corrupt).find(bad + ": corrupt header (") == 0);
  CHECK_THROWS_AS(lucid::load(temp_path("missing.lucid")), lucid::Error);
  // a CheckpointError is an InvalidArgument (Python: a ValueError)
  write_file(bad, "LUCIDCKP");
  CHECK_THROWS_AS(lucid::load(bad), lucid::InvalidArgument);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}
