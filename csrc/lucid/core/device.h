#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "lucid/core/hash.h"

namespace lucid {

enum class DeviceType : uint8_t { CPU, Metal, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "metal", "cuda:1"
};
inline size_t hash_value(const Device& d) { return hash_mix(size_t(d.type), size_t(d.index)); }

Device parse_device(const std::string& s);
const char* device_type_name(DeviceType t);

// Memory of one device. A backend registers one allocator per device type.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  // Whether the device can be used now: a backend whose driver is loaded at
  // run time (cuda) is registered on every machine, usable only on some.
  virtual bool usable() const { return true; }
};

void register_allocator(DeviceType t, Allocator* a);
Allocator* allocator_for(const Device& d);  // TypeError when the backend is absent
bool device_available(DeviceType t);  // registered and usable

}  // namespace lucid
