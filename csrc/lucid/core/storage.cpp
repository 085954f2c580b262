#include "lucid/core/storage.h"

namespace lucid {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  allocator_ = allocator_for(device);
  data_ = allocator_->allocate(nbytes);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void()> release)
    : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}

std::shared_ptr<Storage> Storage::placeholder(size_t nbytes, Device device) {
  return std::make_shared<Storage>(nullptr, nbytes, device, std::function<void()>());
}

Storage::~Storage() {
  if (allocator_)
    allocator_->deallocate(data_, nbytes_);
  else if (release_)
    release_();
}

}  // namespace lucid
