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
#include "lucid/checkpoint/crc32c.h"
#include "lucid/checkpoint/format.h"
#include "lucid/checkpoint/safetensors.h"

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
  std::string v3 = bytes;
  v3[8] = 3;
  CHECK(error_for(v3) == bad + ": unsupported format version 3 (this Lucid reads versions 1 and 2)");
  std::string corrupt = bytes;
  corrupt[24] = '[';
  CHECK(error_for(corrupt) == bad + ": damaged file: the header's checksum does not match its bytes");
  std::string flipped = bytes;
  flipped[flipped.size() - 64] ^= 0x10;  // the first element of "w" (its data section is 64 bytes)
  CHECK(error_for(flipped) == bad + ": damaged file: the checksum of tensor obj['w'] (entry 0) does not match its bytes");
  CHECK_THROWS_AS(lucid::load(temp_path("missing.lucid")), lucid::Error);
  // a CheckpointError is an InvalidArgument (Python: a ValueError)
  write_file(bad, "LUCIDCKP");
  CHECK_THROWS_AS(lucid::load(bad), lucid::InvalidArgument);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("crc32c: the published check values, hardware and portable paths alike") {
  using lucid::checkpoint::crc32c;
  using lucid::checkpoint::crc32c_portable;
  const std::string digits = "123456789";
  CHECK(crc32c(digits.data(), digits.size()) == 0xE3069283u);
  CHECK(crc32c_portable(digits.data(), digits.size()) == 0xE3069283u);
  const std::string zeros(32, '\0');  // RFC 3720, B.4
  CHECK(crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
  std::string ramp(1000, '\0');
  for (size_t k = 0; k < ramp.size(); ++k) ramp[k] = char(k * 7 + 3);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999}) {
    CAPTURE(cut);
    const uint32_t whole = crc32c(ramp.data(), ramp.size());
    CHECK(crc32c(ramp.data() + cut, ramp.size() - cut, crc32c(ramp.data(), cut)) == whole);
    CHECK(crc32c_portable(ramp.data() + 1, ramp.size() - 1 - cut % 5) == crc32c(ramp.data() + 1, ramp.size() - 1 - cut % 5));
  }
}

TEST_CASE("save/load: metadata, Parameter marks, NumPy arrays, wide ints and pickled objects round-trip") {
  Value sd = lucid::state_dict({{"0.weight", lucid::ones({2, 2})}});
  sd.set_metadata(Value::dict({{"", Value::dict({{"version", 1}})}}, /*ordered=*/true));
  auto bytes = std::shared_ptr<uint8_t>(new uint8_t[3]{1, 2, 255}, std::default_delete<uint8_t[]>());
  const Value arr = Value::array(lucid::Array{"uint8", {3}, false, bytes});
  Tensor w = lucid::randn({3});
  w.set_requires_grad(true);
  const Value obj = Value::dict({{"sd", sd},
                                 {"param", Value::parameter(w)},
                                 {"arr", arr},
                                 {"arr_again", arr},
                                 {"big", Value::big_integer("-123456789012345678901234567890")},
                                 {"pickled", Value::pickled(std::string("\x80\x04K\x01.", 5), {arr})}});
  const std::string path = temp_path("metadata.lucid");
  lucid::save(obj, path);
  const Value back = lucid::load(path);
  std::remove(path.c_str());
  REQUIRE(back["sd"].metadata() != nullptr);
  CHECK(*back["sd"].metadata() == *sd.metadata());
  CHECK(back["param"].is_parameter());
  CHECK(back["param"].tensor().requires_grad());
  const lucid::Array& a = back["arr"].array();
  CHECK(a.dtype == "uint8");
  CHECK(a.shape == lucid::Shape{3});
  CHECK(std::vector<uint8_t>(a.data.get(), a.data.get() + 3) == std::vector<uint8_t>{1, 2, 255});
  CHECK(back["arr"] == back["arr_again"]);  // stored once, loads as one
  CHECK(back["big"].big_integer() == "-123456789012345678901234567890");
  CHECK(back["pickled"].pickled().bytes == std::string("\x80\x04K\x01.", 5));
  CHECK(back["pickled"].pickled().refs.at(0) == back["arr"]);
  CHECK_THROWS_AS(Value::array(lucid::Array{"object", {1}, false, bytes}), lucid::TypeError);
}

TEST_CASE("load: crafted headers raise CheckpointError, never another error") {
  const std::string path = temp_path("crafted.lucid");
  auto craft = [&](const std::string& header, const std::string& data) {
    std::string file = "LUCIDCKP";
    const auto put = [&](uint64_t v, int n) {
      for (int k = 0; k < n; ++k) file += char((v >> (8 * k)) & 0xff);
    };
    put(1, 4);  // version 1: no checksums to recompute
    put(header.size(), 8);
    file += header;
    file.append((64 - file.size() % 64) % 64, '\0');
    write_file(path, file + data);
    return message_of<lucid::CheckpointError>([&] { lucid::load(path); });
  };
  const std::string data(64, '\0');
  auto one = [](const std::string& entry, const std::string& root = "{\"t\":\"tensor\",\"i\":0}") {
    return "{\"format\":\"lucid\",\"data_size\":64,\"tensors\":[" + entry + "],\"root\":" + root + "}";
  };
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":[0,4611686018427387904],\"offset\":0,\"nbytes\":0}"), data)
            .find("invalid shape") != std::string::npos);
  std::string dims = "[";
  for (int k = 0; k < 65; ++k) dims += k ? ",1" : "1";
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":" + dims + "],\"offset\":0,\"nbytes\":4}"), data)
            .find("invalid shape") != std::string::npos);
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":[2],\"offset\":0,\"nbytes\":8}",
                  std::string(100000, '[') + std::string(100000, ']')), data)
            .find("nested deeper than") != std::string::npos);
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":[2],\"offset\":0,\"nbytes\":8}", "NaN"), data)
            .find("corrupt header") != std::string::npos);
  CHECK(craft("{\"format\":\"lucid\",\"data_size\":64,\"tensors\":["
              "{\"dtype\":\"float32\",\"shape\":[4],\"offset\":0,\"nbytes\":16},"
              "{\"dtype\":\"float32\",\"shape\":[4],\"offset\":8,\"nbytes\":16}],\"root\":null}", data)
            .find("overlap another entry's") != std::string::npos);
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":[2],\"offset\":9223372036854775800,\"nbytes\":8}"), data)
            .find("lie outside the data section") != std::string::npos);
  CHECK(craft(one("{\"dtype\":\"float32\",\"shape\":[4611686018427387904],\"offset\":0,\"nbytes\":0}"), data)
            .find("invalid shape") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("safetensors: what C++ writes, C++ reads, with NumPy-only dtypes as arrays") {
  auto bytes = std::shared_ptr<uint8_t>(new uint8_t[4]{7, 0, 9, 0}, std::default_delete<uint8_t[]>());
  const Value tensors = Value::dict({{"w", lucid::from_vector<float>({1.5f, -2.f}, {1, 2})},
                                     {"mask", Value::array(lucid::Array{"uint16", {2}, false, bytes})}});
  const std::string path = temp_path("x.safetensors");
  lucid::checkpoint::save_safetensors(tensors, path, {{"format", "pt"}});
  const auto back = lucid::checkpoint::load_safetensors(path);
  std::remove(path.c_str());
  REQUIRE(back.tensors.size() == 2);
  CHECK(back.tensors.items()[0].first.string() == "mask");  // names sorted
  CHECK(values(back.tensors["w"].tensor()) == std::vector<double>{1.5, -2.0});
  CHECK(back.tensors["mask"].array().dtype == "uint16");  // no Lucid dtype: stays an array
  CHECK(back.metadata == lucid::checkpoint::Metadata{{"format", "pt"}});
  CHECK_THROWS_AS(lucid::checkpoint::save_safetensors(Value::dict({{"x", 1}}), path), lucid::TypeError);
}
