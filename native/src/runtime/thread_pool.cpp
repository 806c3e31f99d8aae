#include "mnnpy/thread_pool.h"

#include <algorithm>

namespace mnnpy {

namespace {
thread_local bool t_inside_job = false;
constexpr int kSpinIterations = 20000;

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
  for (int i = 0; i < n - 1; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  num_threads_ = n;
}

void ThreadPool::split(int64_t n, int64_t grain, int threads, int64_t* chunks, int64_t* chunk) const {
  const int64_t max_chunks = (int64_t)threads * 4;
  *chunks = std::min(max_chunks, (n + grain - 1) / grain);
  *chunk = (n + *chunks - 1) / *chunks;
  *chunks = (n + *chunk - 1) / *chunk;
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!stopping_ && generation_ == seen) {
      // A short spin: a job that follows soon (the next kernel of a plan) starts without a wake-up.
      lock.unlock();
      for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_relaxed) == seen; ++i) cpu_relax();
      lock.lock();
    }
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    while (job_ && next_chunk_ < job_chunks_) {
      const int64_t c = next_chunk_++;
      const auto* fn = job_;
      const int64_t begin = c * job_chunk_, end = std::min(job_n_, begin + job_chunk_);
      lock.unlock();
      t_inside_job = true;
      (*fn)(begin, end);
      t_inside_job = false;
      lock.lock();
      if (++chunks_done_ == job_chunks_) done_.notify_all();
    }
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
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  job_chunks_ = chunks;
  next_chunk_ = 0;
  chunks_done_ = 0;
  ++generation_;
  wake_.notify_all();
  // The caller works too.
  while (next_chunk_ < job_chunks_) {
    const int64_t c = next_chunk_++;
    const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    lock.unlock();
    t_inside_job = true;
    fn(begin, end);
    t_inside_job = false;
    lock.lock();
    ++chunks_done_;
  }
  if (chunks_done_ != job_chunks_) {
    // The last chunks are running on workers: spin a while before sleeping, since a wake-up by
    // the condition variable costs more than most kernels' tails.
    lock.unlock();
    for (int i = 0; i < kSpinIterations && chunks_done_.load(std::memory_order_acquire) != job_chunks_; ++i)
      cpu_relax();
    lock.lock();
  }
  done_.wait(lock, [&] { return chunks_done_ == job_chunks_; });
  job_ = nullptr;
}

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else if (n > 0) fn(0, n);
}

}  // namespace mnnpy
