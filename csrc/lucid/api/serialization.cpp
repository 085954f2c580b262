#include "lucid/api/serialization.h"

#include "lucid/checkpoint/format.h"
#include "lucid/ops/ops.h"

namespace lucid {

void save(const Value& obj, const std::string& path) { checkpoint::save(obj, path); }

Value load(const std::string& path, std::optional<Device> map_location) {
  checkpoint::LoadOptions options;
  if (map_location)
    options.map_location = [device = *map_location](Tensor t, const std::string&) { return to_device(t, device); };
  return checkpoint::load(path, options);
}

}  // namespace lucid
