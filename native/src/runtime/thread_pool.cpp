#include "mnnpy/thread_pool.h"

#include <algorithm>

namespace mnnpy {

namespace {
thread_local bool t_inside_job = false;
thread_local int t_share = 0;  // this thread's share of each job: 0 for callers, i + 1 for worker i
constexpr int kSpinIterations = 20000;

// The claim word: the job's generation (bits 32-63) and its chunk count (16-31). A share's word:
// the generation, the share's end (16-31) and its next unclaimed chunk (0-15); a claim decides
// from that one word alone whether a chunk is left.
constexpr int64_t kMaxChunks = 0xffff;
uint32_t generation_of(uint64_t claim) { return (uint32_t)(claim >> 32); }
int64_t chunk_count_of(uint64_t claim) { return (int64_t)((claim >> 16) & 0xffff); }
int64_t share_end_of(uint64_t share) { return (int64_t)((share >> 16) & 0xffff); }
int64_t next_chunk_of(uint64_t share) { return (int64_t)(share & 0xffff); }
uint64_t share_word(uint32_t generation, int64_t end, int64_t next) {
  return (uint64_t)generation << 32 | (uint64_t)end << 16 | (uint64_t)next;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

ThreadPool& ThreadPool::global() {
  static ThreadPool* pool = new ThreadPool();  // never destroyed: workers may outlive static teardown
  return *pool;
}

ThreadPool::ThreadPool() {
  unsigned hw = std::thread::hardware_concurrency();
  set_num_threads(hw == 0 ? 1 : (int)hw);
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  stopping_ = false;
}

void ThreadPool::set_num_threads(int n) {
  n = std::max(1, n);
  // Modules set their thread count on every call: the usual case takes no lock (num_threads_
  // changes only after the workers for it run, under job_mutex_).
  if (n == num_threads_.load()) return;
  std::lock_guard<std::mutex> job_lock(job_mutex_);
  if (n == num_threads_) return;
  stop_workers();
  const uint32_t generation = generation_of(claim_.load());  // no job runs: job_mutex_ is held
  shares_.reset(new std::atomic<uint64_t>[n]);
  for (int i = 0; i < n; ++i) shares_[i].store(share_word(generation, 0, 0));
  for (int i = 0; i < n - 1; ++i) {
    workers_.emplace_back([this, generation, i] {
      t_share = i + 1;
      worker_loop(generation);
    });
  }
  num_threads_ = n;
}

void ThreadPool::split(int64_t n, int64_t grain, int threads, int64_t* chunks, int64_t* chunk) const {
  const int64_t max_chunks = std::min<int64_t>((int64_t)threads * 4, kMaxChunks);
  *chunks = std::min(max_chunks, (n + grain - 1) / grain);
  *chunk = (n + *chunks - 1) / *chunks;
  *chunks = (n + *chunk - 1) / *chunk;
}

void ThreadPool::run_chunks(uint32_t generation) {
  const uint64_t job = claim_.load(std::memory_order_acquire);
  if (generation_of(job) != generation) return;
  const int64_t chunks = chunk_count_of(job);
  const int threads = num_threads_.load(std::memory_order_relaxed);
  // This thread's share first, then the others' in turn.
  for (int k = 0; k < threads; ++k) {
    std::atomic<uint64_t>& share = shares_[(t_share + k) % threads];
    for (;;) {
      uint64_t state = share.load(std::memory_order_acquire);
      int64_t c = 0;
      do {
        // The word alone says whether a chunk of this job is left: a thread still finishing an
        // earlier job sees another generation, or a spent share, and claims nothing.
        c = next_chunk_of(state);
        if (generation_of(state) != generation || c >= share_end_of(state)) break;
      } while (!share.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire));
      if (generation_of(state) != generation || c >= share_end_of(state)) break;
      // The job is unfinished (this chunk was unclaimed), so its fields are still the ones its
      // caller published with this generation.
      const auto* fn = job_.load(std::memory_order_relaxed);
      const int64_t n = job_n_.load(std::memory_order_relaxed), chunk = job_chunk_.load(std::memory_order_relaxed);
      t_inside_job = true;
      (*fn)(c * chunk, std::min(n, (c + 1) * chunk));
      t_inside_job = false;
      if (chunks_done_.fetch_add(1) + 1 == chunks && caller_sleeping_.load()) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
  }
}

void ThreadPool::worker_loop(uint32_t seen) {
  for (;;) {
    // A short spin: a job that follows soon (the next kernel of a plan) starts without a wake-up.
    for (int i = 0; i < kSpinIterations && generation_of(claim_.load(std::memory_order_relaxed)) == seen &&
                    !stopping_.load(std::memory_order_relaxed);
         ++i)
      cpu_relax();
    if (generation_of(claim_.load()) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stopping_.load() || generation_of(claim_.load()) != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stopping_) return;
    seen = generation_of(claim_.load());
    run_chunks(seen);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int threads = num_threads_.load(std::memory_order_relaxed);
  if (threads == 1 || n <= grain || t_inside_job) {
    fn(0, n);
    return;
  }
  int64_t chunks = 0, chunk = 0;
  split(n, grain, threads, &chunks, &chunk);
  // With a plan running on every core's worth of threads already, or the workers busy with
  // another caller's job, this thread runs its own chunks in order, as one worker would (nested
  // calls inline): measured with 2 and 8 Python threads on 2 cores (resnet18), that spends 10-20%
  // less CPU per model call than waiting for the workers, and no thread waits for another's job.
  std::unique_lock<std::mutex> job_lock(job_mutex_, std::defer_lock);
  if (callers_.load(std::memory_order_relaxed) < threads) job_lock.try_lock();
  if (!job_lock.owns_lock()) {
    t_inside_job = true;
    try {
      for (int64_t c = 0; c < chunks; ++c) fn(c * chunk, std::min(n, (c + 1) * chunk));
    } catch (...) {
      t_inside_job = false;
      throw;
    }
    t_inside_job = false;
    return;
  }
  if (num_threads_.load() != threads) {
    // set_num_threads resized the pool between the count read above and this lock (it holds the
    // lock to resize): the shares and the workers are for the new count, so split again by it.
    job_lock.unlock();
    parallel_for(n, grain, fn);
    return;
  }
  job_.store(&fn, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  job_chunk_.store(chunk, std::memory_order_relaxed);
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_of(claim_.load(std::memory_order_relaxed)) + 1;
  for (int i = 0; i < threads; ++i) {
    shares_[i].store(share_word(generation, (i + 1) * chunks / threads, i * chunks / threads),
                     std::memory_order_relaxed);
  }
  claim_.store((uint64_t)generation << 32 | (uint64_t)chunks << 16);  // publishes the fields above
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_chunks(generation);  // the caller works too
  // The last chunks may be running on workers: spin a while before sleeping, since a wake-up by
  // the condition variable costs more than most kernels' tails.
  for (int i = 0; i < kSpinIterations && chunks_done_.load(std::memory_order_acquire) != chunks; ++i) cpu_relax();
  if (chunks_done_.load() != chunks) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true);
    done_.wait(lock, [&] { return chunks_done_.load() == chunks; });
    caller_sleeping_.store(false);
  }
  job_.store(nullptr, std::memory_order_relaxed);
}

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else if (n > 0) fn(0, n);
}

}  // namespace mnnpy
