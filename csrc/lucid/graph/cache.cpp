#include "lucid/graph/cache.h"

#include "lucid/core/error.h"

namespace lucid::graph {

ExecutableCache::ExecutableCache(size_t capacity) : capacity_(capacity) {
  LUCID_CHECK(capacity > 0, "ExecutableCache: capacity must be positive, got ", capacity);
}

std::shared_ptr<Executable> ExecutableCache::get(const std::string& signature) {
  auto it = index_.find(signature);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  entries_.splice(entries_.begin(), entries_, it->second);
  return it->second->second;
}

std::vector<std::string> ExecutableCache::put(const std::string& signature, std::shared_ptr<Executable> exe,
                                              double seconds) {
  erase(signature);
  entries_.emplace_front(signature, std::move(exe));
  index_[signature] = entries_.begin();
  compile_seconds_ += seconds;
  return evict_to(capacity_);
}

void ExecutableCache::erase(const std::string& signature) {
  auto it = index_.find(signature);
  if (it == index_.end()) return;
  entries_.erase(it->second);
  index_.erase(it);
}

void ExecutableCache::clear() {
  entries_.clear();
  index_.clear();
}

void ExecutableCache::set_capacity(size_t capacity) {
  LUCID_CHECK(capacity > 0, "ExecutableCache: capacity must be positive, got ", capacity);
  capacity_ = capacity;
  evict_to(capacity_);
}

std::vector<std::string> ExecutableCache::evict_to(size_t n) {
  std::vector<std::string> evicted;
  while (entries_.size() > n) {
    evicted.push_back(entries_.back().first);
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return evicted;
}

std::vector<std::string> ExecutableCache::signatures() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

}  // namespace lucid::graph
