#pragma once
// The Metal backend's plain C++ surface. Everything Objective-C stays inside
// backend/metal/*.mm (and the Objective-C++-only headers next to them), so
// the rest of the core, and native apps linking it, remain plain C++. The
// backend is compiled only in Apple builds; elsewhere these functions do not
// exist and device_available(DeviceType::Metal) is false.
#include <cstddef>
#include <string>

namespace lucid::metal {

// The GPU the backend runs on (e.g. "Apple M2"), or "" when Metal is absent.
std::string device_name();

// Bytes the allocator keeps in its reuse pool, and a way to hand them back
// to the system (the counterpart of torch.mps.empty_cache()).
size_t cached_bytes();
void empty_cache();

}  // namespace lucid::metal
