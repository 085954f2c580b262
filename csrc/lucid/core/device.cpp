#include "lucid/core/device.h"

#include <array>

#include "lucid/core/error.h"

namespace lucid {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Metal: return "metal";
    case DeviceType::CUDA: return "cuda";
  }
  return "?";
}

std::string Device::str() const {
  std::string s = device_type_name(type);
  if (index != 0) s += ":" + std::to_string(index);
  return s;
}

Device parse_device(const std::string& s) {
  const auto colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    try {
      index = std::stoi(s.substr(colon + 1));
    } catch (...) {
      fail("invalid device string '", s, "'");
    }
  }
  if (kind == "cpu") return {DeviceType::CPU, index};
  if (kind == "metal" || kind == "mps") return {DeviceType::Metal, index};
  if (kind == "cuda") return {DeviceType::CUDA, index};
  fail("invalid device string '", s, "' (expected 'cpu', 'metal' or 'cuda')");
}

static std::array<Allocator*, 3>& allocators() {
  static std::array<Allocator*, 3> table{};
  return table;
}

void register_allocator(DeviceType t, Allocator* a) { allocators()[size_t(t)] = a; }

bool device_available(DeviceType t) {
  const Allocator* a = allocators()[size_t(t)];
  return a != nullptr && a->usable();
}

Allocator* allocator_for(const Device& d) {
  Allocator* a = allocators()[size_t(d.type)];
  if (!a) fail<TypeError>("device '", d.str(), "' is not available in this build of lucid");
  return a;
}

}  // namespace lucid
