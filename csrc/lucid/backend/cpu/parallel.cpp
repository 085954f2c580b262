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

using Clock = std::chrono::steady_clock;

void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// The most an idle worker (or a caller waiting for its job) spins before
// sleeping: a training step issues jobs microseconds apart, and waking a
// sleeping thread costs tens of microseconds on a virtual machine.
// LUCID_SPIN_US overrides it (0: sleep at once).
std::chrono::microseconds max_spin() {
  static const std::chrono::microseconds us{[] {
    const char* env = std::getenv("LUCID_SPIN_US");
    return env ? std::max(0, std::atoi(env)) : 200;
  }()};
  return us;
}

// Whether another process competes for this machine's cores. A spinning
// thread that loses its core for a while, or a job whose caller waits far
// longer for a worker than it worked itself (the worker was descheduled in
// the middle of its chunk), says so. While contended the pool neither spins
// (a spinning thread takes the core from the neighbour and from our own
// descheduled worker) nor splits jobs (a split job waits for its slowest
// part, and a descheduled part costs a scheduler time slice, milliseconds);
// it runs each job on the calling thread. It probes again after a back-off
// that doubles while the contention lasts (up to about a second).
class Contention {
 public:
  bool active(Clock::time_point now) const {
    return now.time_since_epoch().count() < until_.load(std::memory_order_relaxed);
  }
  void observed(Clock::time_point now) {
    int64_t backoff = backoff_.load(std::memory_order_relaxed);
    backoff = std::min<int64_t>(std::max<int64_t>(backoff * 2, kMinBackoff), kMaxBackoff);
    backoff_.store(backoff, std::memory_order_relaxed);
    until_.store(now.time_since_epoch().count() + backoff, std::memory_order_relaxed);
  }
  // A split job ran without a straggler: the back-off starts small again.
  void clear() { backoff_.store(0, std::memory_order_relaxed); }

 private:
  static constexpr int64_t kMinBackoff = std::chrono::nanoseconds(std::chrono::milliseconds(20)).count();
  static constexpr int64_t kMaxBackoff = std::chrono::nanoseconds(std::chrono::milliseconds(1000)).count();
  std::atomic<int64_t> until_{0};    // steady_clock ticks (ns)
  std::atomic<int64_t> backoff_{0};  // ns
};

// A gap between two clock reads of a spin loop this long means the spinning
// thread lost its core (64 pauses take well under 10 us on any CPU).
constexpr auto kDescheduled = std::chrono::microseconds(200);

// Spins until `ready()` for up to `budget`, unless the machine is contended
// (then, or when the thread is descheduled while spinning, it gives up at
// once and reports the contention); true if it became ready.
template <class F>
bool spin_until(F&& ready, std::chrono::microseconds budget, Contention& contention) {
  auto last = Clock::now();
  if (budget.count() == 0 || contention.active(last)) return ready();
  const auto end = last + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63) {
      const auto now = Clock::now();
      if (now - last > kDescheduled) {
        contention.observed(now);
        return false;
      }
      if (now > end) return false;
      last = now;
    }
    cpu_relax();
  }
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

  // Whether jobs should run on the calling thread alone for now.
  bool contended() const { return contention_.active(Clock::now()); }

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
    const auto start = Clock::now();
    work(job);
    const auto worked = Clock::now();
    auto finished = [&] {
      return job.pending.load(std::memory_order_acquire) == 0 && job.inside.load(std::memory_order_acquire) == 0;
    };
    spin_until(finished, max_spin(), contention_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      job_ = nullptr;  // no worker joins from here on
      done_cv_.wait(lock, finished);  // (one may have joined since the spin saw the job finished)
    }
    // A worker that held the caller up far longer than the caller's own share
    // took was descheduled mid-chunk (a late wake-up costs tens of us).
    const auto end = Clock::now();
    if (end - worked > std::max<Clock::duration>(kStraggler, 2 * (worked - start)))
      contention_.observed(end);
    else
      contention_.clear();
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static constexpr auto kStraggler = std::chrono::microseconds(500);

  struct Job {
    Job(const std::function<void(int64_t, int64_t)>& f, int64_t n, int64_t chunk)
        : fn(f), n(n), chunk(chunk), pending(int((n + chunk - 1) / chunk)) {}
    const std::function<void(int64_t, int64_t)>& fn;
    const int64_t n, chunk;
    std::atomic<int64_t> next{0};
    std::atomic<int> pending;    // chunks not finished
    std::atomic<int> inside{0};  // workers that joined (incremented under mu_)
    std::exception_ptr error;    // guarded by mu_
  };

  void work(Job& job) {
    t_in_parallel = true;
    for (;;) {
      const int64_t begin = job.next.fetch_add(job.chunk);
      if (begin >= job.n) break;
      const int64_t end = std::min(job.n, begin + job.chunk);
      try {
        job.fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!job.error) job.error = std::current_exception();
      }
      if (job.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) notify_done();
    }
    t_in_parallel = false;
  }

  // Taking the lock orders the notification after a waiter's predicate check.
  void notify_done() {
    std::lock_guard<std::mutex> lock(mu_);
    done_cv_.notify_all();
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen || stopping_.load(); }, max_spin(),
                 contention_);
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
        job->inside.fetch_add(1, std::memory_order_relaxed);
      }
      work(*job);
      // The job may be gone as soon as `inside` drops: no access after it.
      if (job->inside.fetch_sub(1, std::memory_order_acq_rel) == 1) notify_done();
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
  Contention contention_;
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
  if (threads == 1 || n <= grain || pool().contended()) {
    fn(0, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  pool().run(n, (n + chunks - 1) / chunks, fn);
}

}  // namespace lucid::cpu
