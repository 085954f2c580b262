#pragma once
// Where checkpoint bytes go and come from: files written atomically, files
// and memory read at any position.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace lucid::checkpoint {

// Receives the bytes of a checkpoint in order.
using Sink = std::function<void(const void* data, size_t n)>;

// Runs `write` with a sink into a temporary file in `path`'s directory, then
// flushes it to disk and renames it over `path`: readers see the old file or
// the whole new one, never a part. On any failure the temporary file is
// removed and `path` is untouched. Error when the directory does not exist
// or a write fails.
void write_atomically(const std::string& path, const std::function<void(const Sink&)>& write);

// Bytes to read from, at any position.
class Source {
 public:
  virtual ~Source() = default;
  virtual int64_t size() const = 0;
  // Copies up to `n` bytes at `pos` into `buf`; fewer at the end.
  virtual size_t read_at(int64_t pos, void* buf, size_t n) = 0;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path);  // Error when it cannot be opened
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  int64_t size() const override { return size_; }
  size_t read_at(int64_t pos, void* buf, size_t n) override;

 private:
  int fd_ = -1;
  int64_t size_ = 0;
  std::string path_;
};

class MemorySource : public Source {
 public:
  MemorySource(const void* data, size_t size) : data_(static_cast<const char*>(data)), size_(size) {}
  int64_t size() const override { return int64_t(size_); }
  size_t read_at(int64_t pos, void* buf, size_t n) override;

 private:
  const char* data_;
  size_t size_;
};

// Checkpoints are little-endian; NotImplementedError on a big-endian host.
void require_little_endian();

}  // namespace lucid::checkpoint
