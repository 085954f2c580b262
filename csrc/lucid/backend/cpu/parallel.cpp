#include "lucid/backend/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "lucid/backend/cpu/blas.h"
#include "lucid/core/error.h"

namespace lucid::cpu {

namespace {

thread_local bool t_in_parallel = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins for up to `budget` until `ready()`; true if it became ready.
template <class F>
bool spin_until(F&& ready, std::chrono::microseconds budget) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > end) return false;
    cpu_relax();
  }
}

// How long an idle worker (or a caller waiting for its job) spins before
// sleeping: a training step issues jobs microseconds apart, and waking a
// sleeping thread costs tens of microseconds on a virtual machine.
// LUCID_SPIN_US overrides it (0: sleep at once, for machines shared with
// other busy processes).
std::chrono::microseconds spin_budget() {
  static const std::chrono::microseconds us{[] {
    const char* env = std::getenv("LUCID_SPIN_US");
    return env ? std::max(0, std::atoi(env)) : 200;
  }()};
  return us;
}

// A fixed set of workers that spin briefly, then sleep on a condition
// variable, between jobs. Each job lives on the caller's stack: its range is
// split into chunks that workers (and the caller) claim with an atomic
// counter. A worker joins a job only under the lock while the job is
// published, and run() returns only once every chunk is done and every
// worker that joined has left, so no worker ever touches a finished job.
class ThreadPool {
 public:
  explicit ThreadPool(int n) { resize(n); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return int(workers_.size()) + 1; }

  void resize(int n) {
    std::lock_guard<std::mutex> job_lock(job_mu_);
    stop_workers();
    stopping_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> job_lock(job_mu_);  // one job at a time
    Job job(fn, n, chunk);
    bool sleeping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
      sleeping = sleepers_ > 0;
    }
    if (sleeping) cv_.notify_all();  // spinning workers see the new generation
    work(job);
    auto finished = [&] { return job.pending == 0 && job.inside == 0; };
    spin_until([&] {
      std::lock_guard<std::mutex> lock(mu_);
      return finished();
    }, spin_budget());
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, finished);
    job_ = nullptr;
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    Job(const std::function<void(int64_t, int64_t)>& f, int64_t n, int64_t chunk)
        : fn(f), n(n), chunk(chunk), pending(int((n + chunk - 1) / chunk)) {}
    const std::function<void(int64_t, int64_t)>& fn;
    const int64_t n, chunk;
    std::atomic<int64_t> next{0};
    int pending;     // chunks not finished (guarded by mu_)
    int inside = 0;  // workers that joined (guarded by mu_)
    std::exception_ptr error;
  };

  void work(Job& job) {
    t_in_parallel = true;
    for (;;) {
      const int64_t begin = job.next.fetch_add(job.chunk);
      if (begin >= job.n) break;
      const int64_t end = std::min(job.n, begin + job.chunk);
      std::exception_ptr err;
      try {
        job.fn(begin, end);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (err && !job.error) job.error = err;
      if (--job.pending == 0) done_cv_.notify_all();
    }
    t_in_parallel = false;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen || stopping_.load(); }, spin_budget());
      {
        // The predicate is checked under the lock before sleeping, so a job
        // published after the spin gave up is not missed.
        std::unique_lock<std::mutex> lock(mu_);
        if (!stopping_ && generation_ != seen && job_ == nullptr) {
          seen = generation_;  // that job finished without us: spin again
          continue;
        }
        ++sleepers_;
        cv_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_ != nullptr); });
        --sleepers_;
        if (stopping_) return;
        seen = generation_;
        job = job_;
        ++job->inside;
      }
      work(*job);
      std::lock_guard<std::mutex> lock(mu_);
      if (--job->inside == 0 && job->pending == 0) done_cv_.notify_all();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex job_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  Job* job_ = nullptr;                  // guarded by mu_
  std::atomic<uint64_t> generation_{0};  // written under mu_, read by spinning workers
  std::atomic<bool> stopping_{false};
  int sleepers_ = 0;                    // workers blocked on cv_ (guarded by mu_)
};

int default_threads() {
  if (const char* env = std::getenv("LUCID_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  static ThreadPool* p = [] {
    const int n = default_threads();
    blas::set_threads(1);  // BLAS calls are split across the pool instead (matmul_kernel.cpp)
    return new ThreadPool(n);  // leaked on purpose: no join at static destruction
  }();
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  LUCID_CHECK(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  pool().resize(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = t_in_parallel ? 1 : pool().size();
  if (threads == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  pool().run(n, (n + chunks - 1) / chunks, fn);
}

}  // namespace lucid::cpu
