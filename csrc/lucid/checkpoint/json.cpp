#include "lucid/checkpoint/json.h"

#include <cstdint>
#include <limits>
#include <unordered_set>
#include <vector>

#include "lucid/checkpoint/value.h"
#include "lucid/core/error.h"
#include "lucid/optim/hyper.h"

namespace lucid::checkpoint {
namespace {

bool integer_syntax(const std::string& s) {
  size_t k = !s.empty() && s[0] == '-' ? 1 : 0;
  if (k == s.size()) return false;
  for (; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  return true;
}

Json big_integer(const std::string& digits) {
  Json j = Json::object();
  j["t"] = "int";
  j["v"] = digits;
  return j;
}

// Builds the tree from nlohmann's SAX events, with a depth limit and a
// check for repeated keys (each object keeps a set of its keys, so a header
// with many keys stays linear).
class TreeBuilder {
 public:
  explicit TreeBuilder(Json& root) : root_(root) {}
  const std::string& error() const { return error_; }

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (v <= uint64_t(std::numeric_limits<int64_t>::max())) return put(Json(int64_t(v)));
    return put(big_integer(std::to_string(v)));
  }
  bool number_float(Json::number_float_t v, const std::string& text) {
    if (integer_syntax(text)) return put(big_integer(text));  // an integer too wide for int64
    return put(Json(v));
  }
  bool string(std::string& s) { return put(Json(std::move(s))); }
  bool binary(Json::binary_t&) { return bad("binary values are not JSON"); }
  bool start_object(std::size_t) {
    keys_.emplace_back();
    return open(Json::object());
  }
  bool key(std::string& k) {
    if (!keys_.back().insert(k).second) return bad("repeated key " + py_str_repr(k));
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    keys_.pop_back();
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    if (error_.empty()) {
      // nlohmann's message without its "[json.exception.parse_error.101] " prefix
      std::string what = e.what();
      const size_t close = what.find("] ");
      error_ = close == std::string::npos ? what : what.substr(close + 2);
    }
    return false;
  }

 private:
  bool bad(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  Json* put(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool open(Json container) {
    if (int(stack_.size()) >= kMaxJsonDepth)
      return bad("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    // only the innermost open container grows, so pointers to the open ones stay valid
    stack_.push_back(put(std::move(container)));
    return stack_.back() != nullptr;
  }

  Json& root_;
  std::vector<Json*> stack_;
  std::vector<std::unordered_set<std::string>> keys_;
  std::string key_;
  std::string error_;
};

}  // namespace

bool parse_json(const std::string& text, Json& out, std::string& error) {
  out = Json();
  TreeBuilder builder(out);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const std::exception& e) {  // e.g. out of memory on a huge header
    error = e.what();
    return false;
  }
  if (!ok) error = builder.error().empty() ? "malformed JSON" : builder.error();
  return ok;
}

std::string dump_json(const Json& j) {
  try {
    return j.dump();
  } catch (const nlohmann::json::type_error&) {
    fail<TypeError>("cannot save a string that is not valid UTF-8");
  }
}

std::string json_repr(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float: return optim::py_float_repr(j.get<double>());
    case Json::value_t::string: return py_str_repr(j.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::string out = "[";
      bool first = true;
      for (const Json& x : j) {
        out += (first ? "" : ", ") + json_repr(x);
        first = false;
        if (out.size() > 400) return out + ", ...]";
      }
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : j.items()) {
        out += (first ? "" : ", ") + py_str_repr(k) + ": " + json_repr(v);
        first = false;
        if (out.size() > 400) return out + ", ...}";
      }
      return out + "}";
    }
    default: return "?";
  }
}

}  // namespace lucid::checkpoint
