#pragma once
// JSON for the checkpoint readers and writers, through nlohmann/json. Private
// to the library (not installed): the public headers never name nlohmann.
#include <string>

#include <nlohmann/json.hpp>

namespace lucid::checkpoint {

using Json = nlohmann::ordered_json;

// Deeper nesting is refused, so a crafted file cannot exhaust the stack of
// code that walks the tree (nlohmann's own parser does not recurse).
inline constexpr int kMaxJsonDepth = 4000;

// Parses `text` as one JSON value. False, with `error` saying why, for
// malformed JSON, NaN or Infinity literals (not JSON), a repeated key in an
// object, or nesting deeper than kMaxJsonDepth. An integer literal outside
// int64 (Python writes any int) becomes {"t": "int", "v": "<digits>"}, the
// form the checkpoint writer uses for such integers.
bool parse_json(const std::string& text, Json& out, std::string& error);

// Compact JSON text; TypeError for a string that is not valid UTF-8.
std::string dump_json(const Json& j);

// What Python's repr() shows for the value json.loads would give, for
// messages.
std::string json_repr(const Json& j);

}  // namespace lucid::checkpoint
