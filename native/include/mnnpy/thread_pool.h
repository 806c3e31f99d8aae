// One process-wide pool sized by set_num_threads. Workers spin for a few microseconds after
// a job (back-to-back jobs then start at once), then sleep on a condition variable; the calling
// thread takes part in the work, so one thread means no wake-ups. Starting a job and claiming its
// chunks take no lock (atomic words), so many threads start and split a short job quickly. Each
// thread first runs its own share of a job's chunks, the same share of every job (the caller the
// first, worker i the (i + 1)-th), then takes the chunks left in the others' shares: consecutive
// kernels over the same rows of an image then find their inputs in the cache of the core that
// wrote them.
// Several threads may call parallel_for at once: the pool runs one caller's job at a time, and a
// caller that finds it busy, or that runs a plan while as many threads as the pool has run plans
// (Caller), runs its own job's chunks itself (its thread is a core's worth of work already), so
// concurrent callers never wait on each other. set_num_threads may be called at any time; it
// waits for the running job.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mnnpy {

class ThreadPool {
 public:
  static ThreadPool& global();
  ~ThreadPool();
  void set_num_threads(int n);
  int num_threads() const { return num_threads_.load(std::memory_order_relaxed); }
  // Calls fn(begin, end) over [0, n) in chunks of at least `grain` items, on up to
  // num_threads() threads. Nested calls from a worker run inline. The chunks depend only on n,
  // grain and num_threads(), never on who runs them, so results do not depend on contention.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Counts the calling thread as running a plan while it lives. While as many threads run plans
  // as the pool has threads, each core has a caller already: their jobs run on the caller alone
  // (the same chunks), without waking workers that would only compete for the cores.
  class Caller {
   public:
    explicit Caller(ThreadPool& pool) : pool_(pool) { pool_.callers_.fetch_add(1, std::memory_order_relaxed); }
    ~Caller() { pool_.callers_.fetch_sub(1, std::memory_order_relaxed); }
    Caller(const Caller&) = delete;
    Caller& operator=(const Caller&) = delete;

   private:
    ThreadPool& pool_;
  };

 private:
  ThreadPool();
  void worker_loop(uint32_t generation);
  void stop_workers();
  // Claims and runs chunks of job `generation` until none is left.
  void run_chunks(uint32_t generation);

  // Chunks of a job of n items: their count and size.
  void split(int64_t n, int64_t grain, int threads, int64_t* chunks, int64_t* chunk) const;

  std::atomic<int> num_threads_{1};  // read without a lock by callers deciding whether to split
  std::atomic<int> callers_{0};      // threads running plans now (Caller)
  std::vector<std::thread> workers_;
  std::mutex mutex_;      // only for sleeping and waking: jobs start and chunks are claimed without it
  std::mutex job_mutex_;  // held by the caller whose job the workers run, and by set_num_threads
  std::condition_variable wake_, done_;
  // The running job, written by its caller before it publishes the job's generation in claim_,
  // and unchanged until its last chunk is done.
  std::atomic<const std::function<void(int64_t, int64_t)>*> job_{nullptr};
  std::atomic<int64_t> job_n_{0}, job_chunk_{0};
  // The job's generation and chunk count in one word (thread_pool.cpp), and per thread the
  // generation, end and next unclaimed chunk of its share, so that a thread still finishing an
  // earlier job can never claim a chunk of the next one.
  std::atomic<uint64_t> claim_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> shares_;
  std::atomic<int64_t> chunks_done_{0};
  std::atomic<int> sleepers_{0};              // workers asleep on wake_ (or about to be)
  std::atomic<bool> caller_sleeping_{false};  // the caller asleep on done_ (or about to be)
  std::atomic<bool> stopping_{false};
};

// Runs fn over [0, n) on `pool`, or on the calling thread alone when there is none.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace mnnpy
