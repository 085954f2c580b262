#include "lucid/checkpoint/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lucid/core/error.h"

namespace lucid::checkpoint {

void require_little_endian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  if (b != 1) fail<NotImplementedError>("Lucid checkpoints are little-endian; this host is big-endian");
}

void write_atomically(const std::string& path, const std::function<void(const Sink&)>& write) {
  const size_t slash = path.find_last_of('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail<Error>("cannot save to ", path, ": directory ", directory, " does not exist");
  std::string tmp = directory + "/." + base + ".XXXXXX.tmp";
  int fd = ::mkstemps(&tmp[0], 4);
  if (fd < 0) fail<Error>("cannot save to ", path, ": ", std::strerror(errno));
  try {
    const Sink sink = [&](const void* data, size_t n) {
      const char* p = static_cast<const char*>(data);
      while (n) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
          if (errno == EINTR) continue;
          fail<Error>("cannot write ", path, ": ", std::strerror(errno));
        }
        p += w;
        n -= size_t(w);
      }
    };
    write(sink);
    if (::fsync(fd) != 0) fail<Error>("cannot write ", path, ": ", std::strerror(errno));
    // mkstemp makes the file private; give it the mode a plain open() would
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail<Error>("cannot write ", path, ": ", std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail<Error>("cannot save to ", path, ": ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

FileSource::FileSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail<Error>("cannot open ", path, ": ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail<Error>("cannot read ", path, ": ", std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    fail<Error>("cannot read ", path, ": it is a directory");
  }
  size_ = int64_t(st.st_size);
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

size_t FileSource::read_at(int64_t pos, void* buf, size_t n) {
  size_t done = 0;
  char* out = static_cast<char*>(buf);
  while (done < n) {
    const ssize_t r = ::pread(fd_, out + done, n - done, off_t(pos + int64_t(done)));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail<Error>("cannot read ", path_, ": ", std::strerror(errno));
    }
    if (r == 0) break;
    done += size_t(r);
  }
  return done;
}

size_t MemorySource::read_at(int64_t pos, void* buf, size_t n) {
  if (pos < 0 || size_t(pos) >= size_) return 0;
  const size_t k = std::min(n, size_ - size_t(pos));
  std::memcpy(buf, data_ + pos, k);
  return k;
}

}  // namespace lucid::checkpoint
