#pragma once
// The safetensors format (what model hubs publish), read and written here so
// lucid.load / lucid.save handle `.safetensors` files without the
// safetensors package:
//   8 bytes    N, little-endian uint64
//   N bytes    JSON header {name: {"dtype": "F32", "shape": [...],
//              "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}},
//              padded with spaces
//   the data: each tensor's bytes in C order, little-endian, back to back
// Reading checks what the safetensors library checks (header size, offsets
// contiguous from 0 to the end of the file, sizes matching shapes), with
// overflow-safe arithmetic; CheckpointError names the file and the tensor.
#include <string>
#include <utility>
#include <vector>

#include "lucid/checkpoint/format.h"

namespace lucid::checkpoint {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsFile {
  Value tensors;      // a dict {name: tensor}, names sorted; dtypes Lucid has no tensor for
                      // (U8, I8, I16, U16, U32, U64, C64) come as NumPy arrays
  Metadata metadata;  // "__metadata__"
};

// `tensors`: a dict {str: tensor or NumPy array}. TypeError for anything
// else, before any byte is written; the file is written atomically.
void save_safetensors(const Value& tensors, const std::string& path, const Metadata& metadata = {});
void save_safetensors(const Value& tensors, const Sink& sink, const Metadata& metadata = {});

SafetensorsFile load_safetensors(const std::string& path, const LoadOptions& options = {});
SafetensorsFile load_safetensors(Source& source, const std::string& name, const LoadOptions& options = {});

// Whether `source` starts like a safetensors file (a plausible header length
// followed by '{').
bool looks_like_safetensors(Source& source);

}  // namespace lucid::checkpoint
