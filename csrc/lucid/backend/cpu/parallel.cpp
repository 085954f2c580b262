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
#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/times.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
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

// Whether other processes keep this process's CPUs busy. Spinning then
// takes a core from the neighbour and from our own threads (the caller's
// serial work between jobs loses its slices to a spinning worker), and a
// split job waits for a descheduled part; Contention only sees that after a
// time slice is lost. Every 200 ms the first job to notice samples the busy
// time of the CPUs this process may run on (/proc/stat) against its own CPU
// time (times()); busy when the others' share leaves fewer free cores than
// the pool has threads. The first sample has no window yet: it counts the
// threads runnable at that instant (procs_running) that are not ours, so a
// neighbour already running is seen at the first job. Linux only
// (elsewhere: never busy).
class NeighbourLoad {
 public:
  bool busy(Clock::time_point now, int threads) {
#if defined(__linux__)
    const int64_t t = now.time_since_epoch().count();
    int64_t next = next_sample_.load(std::memory_order_relaxed);
    if (t >= next && next_sample_.compare_exchange_strong(next, t + kPeriod, std::memory_order_relaxed))
      sample(threads);
#else
    (void)now, (void)threads;
#endif
    return busy_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr int64_t kPeriod = std::chrono::nanoseconds(std::chrono::milliseconds(200)).count();

#if defined(__linux__)
  // Called by one thread at a time (the compare-exchange above).
  void sample(int threads) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return;
    int64_t system = -1, running = -1;
    read_proc_stat(mask, system, running);
    struct tms own;
    if (system < 0 || times(&own) == clock_t(-1)) return;
    const int64_t mine = int64_t(own.tms_utime) + int64_t(own.tms_stime);
    const auto wall = Clock::now();
    if (!sampled_ && running >= 0) {
      const int64_t others = running - own_runnable_threads();
      busy_.store(others > std::max<int64_t>(0, sysconf(_SC_NPROCESSORS_ONLN) - threads), std::memory_order_relaxed);
    } else if (sampled_) {
      const double seconds = std::chrono::duration<double>(wall - last_wall_).count();
      const double others = double((system - last_system_) - (mine - last_own_)) / double(ticks_per_second_) / seconds;
      // `others` cores in use by the neighbours, with slack for the ticks'
      // granularity (a tick is 0.05 of a core over 200 ms).
      busy_.store(others > double(std::max(0, CPU_COUNT(&mask) - threads)) + 0.3, std::memory_order_relaxed);
    }
    sampled_ = true;
    last_system_ = system, last_own_ = mine, last_wall_ = wall;
  }

  // From /proc/stat: the busy clock ticks (everything but idle and iowait)
  // summed over the CPUs in `mask`, and the threads runnable now; each
  // stays -1 if unreadable.
  static void read_proc_stat(const cpu_set_t& mask, int64_t& busy, int64_t& running) {
    char buf[16384];
    if (read_file("/proc/stat", buf, sizeof buf) <= 0) return;
    int64_t total = 0;
    for (char* line = buf; line && *line; line = std::strchr(line, '\n') ? std::strchr(line, '\n') + 1 : nullptr) {
      int cpu;
      unsigned long long f[8] = {};  // user nice system idle iowait irq softirq steal
      long long n;
      if (std::sscanf(line, "procs_running %lld", &n) == 1) running = n;
      if (std::strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;
      if (std::sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &f[0], &f[1], &f[2], &f[3], &f[4],
                      &f[5], &f[6], &f[7]) < 5 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask))
        continue;
      total += int64_t(f[0] + f[1] + f[2] + f[5] + f[6] + f[7]);  // steal: another guest had the core
    }
    busy = total;
  }

  // This process's threads in state R (/proc/self/task/*/stat).
  static int64_t own_runnable_threads() {
    int64_t n = 0;
    DIR* dir = opendir("/proc/self/task");
    if (!dir) return 1;  // (at least the caller)
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      char path[300], buf[512];
      std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
      if (read_file(path, buf, sizeof buf) <= 0) continue;
      const char* state = std::strrchr(buf, ')');  // "pid (comm) S ...": comm may hold spaces
      if (state && state[1] == ' ' && state[2] == 'R') ++n;
    }
    closedir(dir);
    return n;
  }

  // The file's first size - 1 bytes, NUL-terminated; its length or -1.
  static ssize_t read_file(const char* path, char* buf, size_t size) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t len = ::read(fd, buf, size - 1);
    ::close(fd);
    if (len >= 0) buf[len] = 0;
    return len;
  }

  const long ticks_per_second_ = sysconf(_SC_CLK_TCK);
  bool sampled_ = false;
  int64_t last_system_ = 0, last_own_ = 0;
  Clock::time_point last_wall_;
#endif
  std::atomic<int64_t> next_sample_{0};
  std::atomic<bool> busy_{false};
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
  bool contended() {
    const auto now = Clock::now();
    return neighbours_.busy(now, size()) || contention_.active(now);
  }

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
  NeighbourLoad neighbours_;
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
