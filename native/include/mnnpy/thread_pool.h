// One process-wide pool sized by set_num_threads. Workers spin for a few microseconds after
// a job (back-to-back jobs then start at once), then sleep on a condition variable; the calling thread takes part in the work, so one thread means no wake-ups.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mnnpy {

class ThreadPool {
 public:
  static ThreadPool& global();
  ~ThreadPool();
  void set_num_threads(int n);
  int num_threads() const { return num_threads_; }
  // Calls fn(begin, end) over [0, n) in chunks of at least `grain` items, on up to
  // num_threads() threads. Nested calls from a worker run inline.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  ThreadPool();
  void worker_loop(int index);
  void stop_workers();

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;            // guards the fields below and serializes jobs
  std::mutex job_mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0, job_chunks_ = 0;
  int64_t next_chunk_ = 0;
  std::atomic<int64_t> chunks_done_{0};  // written under mutex_; read without it while the caller spins
  std::atomic<uint64_t> generation_{0};
  bool stopping_ = false;
};

// Runs fn over [0, n) on `pool`, or on the calling thread alone when there is none.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace mnnpy
