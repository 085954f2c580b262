#pragma once
// lucid::save / lucid::load: checkpoints in the format Python's lucid.save /
// lucid.load use (one implementation, lucid/checkpoint/format.h, which also
// documents the layout). A file written here loads in Python and the other
// way round, metadata included (an OrderedDict's _metadata, nn.Parameter
// marks, NumPy arrays, pickled Python objects carried through unchanged).
//
// What a file holds is a Value (lucid/checkpoint/value.h): None, bool, int,
// float, str, list, tuple, dict, tensors, dtypes, devices, NumPy arrays.
//
//   lucid::Value sd = lucid::Value::dict();
//   sd.set("0.weight", w);                  // a module state_dict
//   lucid::save(lucid::Value::dict({{"model", sd}, {"epoch", 3}}), "ckpt.lucid");
//   lucid::Value ck = lucid::load("ckpt.lucid");
//   lucid::Tensor w2 = ck["model"]["0.weight"].tensor();
//
// `.safetensors` files: lucid::checkpoint::save_safetensors /
// load_safetensors (lucid/checkpoint/safetensors.h).
#include <optional>
#include <string>

#include "lucid/checkpoint/value.h"
#include "lucid/core/device.h"

namespace lucid {

// Writes `obj` to `path` atomically (a temporary file in the same directory,
// renamed over the target). Throws TypeError for what the format cannot hold
// (a symbolic tensor, a container key) before writing any byte.
void save(const Value& obj, const std::string& path);
// Reads a checkpoint; `map_location` moves every tensor to that device.
// CheckpointError for a damaged file (with the file's name, and the tensor
// whose checksum fails); Error when a tensor's device is not available and no
// map_location is given.
Value load(const std::string& path, std::optional<Device> map_location = std::nullopt);

}  // namespace lucid
