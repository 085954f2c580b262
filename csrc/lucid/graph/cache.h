#pragma once
// The ExecutableCache: compiled steps keyed by their signature (everything a
// trace depended on), bounded by LRU eviction, with the counters a user
// needs to see why a step recompiles.
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lucid/graph/executable.h"

namespace lucid::graph {

class ExecutableCache {
 public:
  explicit ExecutableCache(size_t capacity = 8);

  // Null on a miss (counted); a hit moves the entry to the front.
  std::shared_ptr<Executable> get(const std::string& signature);
  // Inserts (or replaces) an entry; returns the signatures evicted to make room.
  std::vector<std::string> put(const std::string& signature, std::shared_ptr<Executable> exe, double compile_seconds);
  void erase(const std::string& signature);
  void clear();

  void set_capacity(size_t capacity);  // evicts down to the new size
  size_t capacity() const { return capacity_; }
  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  double compile_seconds() const { return compile_seconds_; }
  std::vector<std::string> signatures() const;  // most recent first

 private:
  std::vector<std::string> evict_to(size_t n);
  using Entry = std::pair<std::string, std::shared_ptr<Executable>>;
  std::list<Entry> entries_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t capacity_;
  uint64_t hits_ = 0, misses_ = 0;
  double compile_seconds_ = 0;
};

}  // namespace lucid::graph
