#pragma once
// Freed memory blocks kept by size class, for the next allocation of that
// class: what the device allocators (cpu, cuda) keep instead of handing
// every block back to the system and faulting or mapping it in again on
// the next operation. Not synchronised: its owner locks.
#include <cstddef>
#include <unordered_map>
#include <vector>

namespace lucid {

class BlockCache {
 public:
  // Blocks of up to max_block bytes are kept, max_cached bytes in all.
  BlockCache(size_t max_block, size_t max_cached) : max_block_(max_block), max_cached_(max_cached) {}

  // The size a block of nbytes is kept under: 512-byte steps below 1 MiB,
  // then eight steps per doubling (at most 12.5% over), so freed blocks
  // serve requests of nearby sizes. nbytes itself when too large to keep.
  size_t block_bytes(size_t nbytes) const {
    if (nbytes < (size_t(1) << 20)) return (nbytes + 511) & ~size_t(511);
    size_t step = size_t(1) << 17;
    while (step * 16 <= nbytes) step <<= 1;
    const size_t size = (nbytes + step - 1) / step * step;
    return size <= max_block_ ? size : nbytes;
  }

  // A kept block of `size` (a block_bytes value), or nullptr.
  void* take(size_t size) {
    auto it = size <= max_block_ ? blocks_.find(size) : blocks_.end();
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return p;
  }

  // Keeps a freed block; false when it is too large or the cache is full
  // (the owner frees it).
  bool keep(void* p, size_t size) {
    if (size > max_block_ || cached_ + size > max_cached_) return false;
    blocks_[size].push_back(p);
    cached_ += size;
    return true;
  }

  // Empties the cache, calling free_block(ptr, size) on each block.
  template <class F>
  void release(F&& free_block) {
    for (auto& [size, list] : blocks_)
      for (void* p : list) free_block(p, size);
    blocks_.clear();
    cached_ = 0;
  }

  size_t cached_bytes() const { return cached_; }
  void set_max_cached(size_t bytes) { max_cached_ = bytes; }

 private:
  size_t max_block_, max_cached_;
  size_t cached_ = 0;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
};

}  // namespace lucid
