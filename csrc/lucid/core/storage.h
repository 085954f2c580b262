#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "lucid/core/device.h"

namespace lucid {

// A refcounted block of device memory. Tensors that share it (views,
// detach) see each other's in-place writes; `version` counts those writes so
// autograd can tell a saved value was overwritten.
class Storage {
 public:
  Storage(size_t nbytes, Device device);
  // Wraps memory owned elsewhere (a NumPy array); `release` runs on destruction.
  Storage(void* data, size_t nbytes, Device device, std::function<void()> release);
  // The memory of a traced value, which has none yet: views of the value
  // share it, so a trace can tell which tensors alias and count writes.
  static std::shared_ptr<Storage> placeholder(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::function<void()> release_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace lucid
