#include "lucid/backend/cuda/compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "lucid/backend/cuda/driver.h"
#include "lucid/backend/cuda/sources.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {

std::string cache_dir() {
  if (const char* d = std::getenv("LUCID_CUDA_CACHE")) return d;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) base = x;
  else if (const char* h = std::getenv("HOME")) base = std::string(h) + "/.cache";
  else return "";
  return base + "/lucid/cuda";
}

void make_dirs(const std::string& path) {
  for (size_t p = 1; p <= path.size(); ++p)
    if (p == path.size() || path[p] == '/') mkdir(path.substr(0, p).c_str(), 0755);
}

std::string nvrtc_version() {
  const NvrtcApi& n = nvrtc();
  int major = 0, minor = 0;
  n.nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

// Compiles with NVRTC; on failure returns false with the log in `log`.
bool nvrtc_compile(const ModuleJob& job, std::string& cubin, std::string& log) {
  const NvrtcApi& n = nvrtc();
  nvrtcProgram prog = nullptr;
  check_nvrtc(n.nvrtcCreateProgram(&prog, job.source.c_str(), "lucid_kernels.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const std::string arch_opt = "--gpu-architecture=" + job.arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "--fmad=false"};
  const nvrtcResult r = n.nvrtcCompileProgram(prog, job.fmad ? 3 : 4, opts);
  size_t log_size = 0;
  n.nvrtcGetProgramLogSize(prog, &log_size);
  log.assign(log_size, '\0');
  if (log_size) n.nvrtcGetProgramLog(prog, log.data());
  bool ok = r == 0;
  if (ok) {
    size_t size = 0;
    check_nvrtc(n.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    cubin.assign(size, '\0');
    check_nvrtc(n.nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  }
  n.nvrtcDestroyProgram(&prog);
  return ok;
}

// Where `job`'s machine code is cached ("" without a cache directory).
std::string cache_path(const ModuleJob& job) {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  const std::string key =
      job.source + "\n//" + job.arch + " nvrtc " + nvrtc_version() + (job.fmad ? "" : " --fmad=false");
  char name[64];
  std::snprintf(name, sizeof name, "/%016llx.cubin", (unsigned long long)source_hash(key));
  return dir + name;
}

bool cached(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

std::string read_cached(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string compile_and_store(const ModuleJob& job, const std::string& path) {
  std::string cubin, log;
  const auto t0 = std::chrono::steady_clock::now();
  if (!nvrtc_compile(job, cubin, log))
    fail<Error>("internal: a CUDA kernel failed to compile for ", job.arch, ":\n", log);
  static const bool log_compiles = [] {
    const char* v = std::getenv("LUCID_CUDA_COMPILE_LOG");
    return v && *v && std::string(v) != "0";
  }();
  if (log_compiles)
    std::fprintf(stderr, "lucid cuda: compiled %s (%zu source bytes) in %.3f s\n", job.label.c_str(),
                 job.source.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!path.empty()) {  // written whole, then renamed: readers never see a partial file
    make_dirs(cache_dir());
    const std::string tmp = path + ".tmp" + std::to_string(getpid()) + "." +
                            std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
    std::ofstream out(tmp, std::ios::binary);
    out.write(cubin.data(), std::streamsize(cubin.size()));
    out.close();
    if (out) std::rename(tmp.c_str(), path.c_str());
    else std::remove(tmp.c_str());
  }
  return cubin;
}

// The background compiler: a queue of keyed jobs and background_threads()
// threads, started with the first jobs. Jobs run in the order queued, urgent
// ones first; a caller that takes a queued job runs it itself, and one
// waiting for a job in flight runs the next urgent one meanwhile.
class BackgroundCompiler {
 public:
  static BackgroundCompiler& get() {
    static BackgroundCompiler* c = [] {
      auto* c = new BackgroundCompiler();  // never destroyed: threads may outlive static destructors
      std::atexit([] { get().stop(); });
      return c;
    }();
    return *c;
  }

  void queue(const std::string& key, ModuleJob job, bool urgent) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || entries_.count(key)) return;
    Entry& e = entries_[key];
    e.job = std::move(job);
    e.urgent = urgent;
    if (urgent) pending_.push_front(key);
    else pending_.push_back(key);
    if (threads_ < background_threads() && threads_ < pending_.size()) {
      ++threads_;
      std::thread([this] { work(); }).detach();
    }
    cv_.notify_one();
  }

  std::string take(const std::string& key, const ModuleJob& job) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.state == Entry::Queued) {
      entries_.erase(it);  // the worker that pops the key skips it
      it = entries_.end();
    }
    if (it == entries_.end()) {
      lock.unlock();
      return compile_cubin(job);
    }
    // While a background thread compiles it, compile the next urgent job
    // here rather than wait idle (not a merely likely one, which could
    // keep this caller long after its own job is done).
    for (;;) {
      it = entries_.find(key);
      if (it == entries_.end() || it->second.state == Entry::Done) break;
      if (stopping_ || !run_next(lock, /*urgent_only=*/true)) cv_.wait(lock);
    }
    std::string cubin;
    std::exception_ptr error;
    if (it != entries_.end()) {
      cubin = std::move(it->second.cubin);
      error = it->second.error;
      entries_.erase(it);
    }
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return cubin.empty() ? compile_cubin(job) : cubin;  // (else in the disk cache)
  }

 private:
  struct Entry {
    enum State { Queued, Running, Done } state = Queued;
    bool urgent = false;
    ModuleJob job;
    std::string cubin;  // when it could not be stored in the disk cache
    std::exception_ptr error;
  };

  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) break;
      run_next(lock, false);
    }
    --threads_;
    cv_.notify_all();
  }

  // Runs the next queued job (`lock` held on entry and exit, released while
  // compiling); false when none (or no urgent one) is queued.
  bool run_next(std::unique_lock<std::mutex>& lock, bool urgent_only) {
    while (!pending_.empty()) {
      const std::string key = pending_.front();
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.state == Entry::Queued && urgent_only && !it->second.urgent) return false;
      pending_.pop_front();
      if (it == entries_.end() || it->second.state != Entry::Queued) continue;
      Entry& e = it->second;  // (not erased while running)
      e.state = Entry::Running;
      lock.unlock();
      std::string cubin;
      std::exception_ptr error;
      try {
        const std::string path = cache_path(e.job);
        if (!cached(path)) cubin = compile_and_store(e.job, path);
        if (cached(path)) cubin.clear();  // stored: read when taken
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      e.cubin = std::move(cubin);
      e.error = error;
      e.state = Entry::Done;
      cv_.notify_all();
      return true;
    }
    return false;
  }

  // At exit: drops the queue and waits for the compiles in flight, which
  // must not run into NVRTC's static destructors.
  void stop() {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    pending_.clear();
    cv_.notify_all();
    cv_.wait(lock, [&] { return threads_ == 0; });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Entry> entries_;  // queued, compiling, or compiled and not yet taken
  std::deque<std::string> pending_;
  size_t threads_ = 0;
  bool stopping_ = false;
};

}  // namespace

size_t background_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::clamp<size_t>(cores > 1 ? cores - 1 : 1, 1, 8);
}

uint64_t source_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string compile_cubin(const ModuleJob& job) {
  const std::string path = cache_path(job);
  std::string cubin = read_cached(path);
  return cubin.empty() ? compile_and_store(job, path) : cubin;
}

void precompile(const std::string& key, ModuleJob job, bool urgent) {
  BackgroundCompiler::get().queue(key, std::move(job), urgent);
}

std::string take_cubin(const std::string& key, const ModuleJob& job) {
  return BackgroundCompiler::get().take(key, job);
}

ModuleJob fixed_shard_job(const std::string& module, const std::string& shard, const std::string& arch) {
  return ModuleJob{shard_source(fixed_module(module), shard), arch, true, module + "[" + shard + "]"};
}

std::string fixed_shard_key(const std::string& module, const std::string& shard) {
  return "fixed:" + module + ":" + shard;
}

void precompile_fixed_modules(const std::string& arch) {
  for (const std::string& shard : kernel_shards())
    for (const ModuleSource& m : fixed_modules()) {
      ModuleJob job = fixed_shard_job(m.name, shard, arch);
      if (!cached(cache_path(job))) precompile(fixed_shard_key(m.name, shard), std::move(job));
    }
}

std::vector<std::pair<std::string, std::string>> compile_fixed_modules(const std::string& arch) {
  for (const std::string& shard : kernel_shards())  // side by side, as a cold first step compiles them
    for (const ModuleSource& m : fixed_modules())
      precompile(fixed_shard_key(m.name, shard), fixed_shard_job(m.name, shard, arch), /*urgent=*/true);
  std::vector<std::pair<std::string, std::string>> failures;
  for (const std::string& shard : kernel_shards())
    for (const ModuleSource& m : fixed_modules()) {
      try {
        if (take_cubin(fixed_shard_key(m.name, shard), fixed_shard_job(m.name, shard, arch)).empty())
          failures.emplace_back(std::string(m.name) + "[" + shard + "]", "no machine code produced");
      } catch (const Error& e) {
        failures.emplace_back(std::string(m.name) + "[" + shard + "]", e.what());
      }
    }
  return failures;
}

}  // namespace lucid::cuda
