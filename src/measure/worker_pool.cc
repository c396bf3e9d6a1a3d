#include "src/measure/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <set>
#include <stdexcept>

namespace cutune {

WorkerPool::WorkerPool(WorkerOptions options, std::vector<int> devices)
    : devices_(std::move(devices)), best_s_(std::numeric_limits<double>::infinity()) {
  if (devices_.empty()) throw std::invalid_argument("a worker pool needs at least one device");
  if (std::set<int>(devices_.begin(), devices_.end()).size() != devices_.size())
    throw std::invalid_argument("a worker pool's devices must be distinct");
  for (size_t i = 0; i < devices_.size(); ++i)
    workers_.push_back(std::make_unique<WorkerSupervisor>(options));
  last_counts_.assign(devices_.size(), 0);
  for (size_t w = 0; w < devices_.size(); ++w) threads_.emplace_back(&WorkerPool::lane, this, w);
}

WorkerPool::~WorkerPool() {
  // The supervisors are destroyed on their own threads: a graceful shutdown while the thread
  // that forked each worker is still alive.
  on_every_worker([this](size_t w) { workers_[w].reset(); });
  {
    std::lock_guard<std::mutex> lock(lane_mutex_);
    quit_ = true;
  }
  lane_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::lane(size_t w) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(lane_mutex_);
      lane_cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(w);
    {
      std::lock_guard<std::mutex> lock(lane_mutex_);
      --pending_;
    }
    lane_cv_.notify_all();
  }
}

void WorkerPool::on_every_worker(const std::function<void(size_t)>& job) {
  std::unique_lock<std::mutex> lock(lane_mutex_);
  job_ = &job;
  pending_ = threads_.size();
  ++generation_;
  lane_cv_.notify_all();
  lane_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void WorkerPool::set_task(const WorkerTask& task, const std::vector<char>& expected_outputs) {
  std::vector<std::exception_ptr> errors(workers_.size());
  on_every_worker([&](size_t w) {
    try {
      WorkerTask mine = task;
      mine.device = devices_[w];
      workers_[w]->set_task(std::move(mine), expected_outputs);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  });
  // The first GPU (in the pool's order) that refused names the failure.
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<PoolResult> WorkerPool::run(size_t n, const Prepare& prepare, const OnDone& on_done) {
  std::vector<PoolResult> results(n);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto fail = [&] {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::current_exception();
    failed = true;
  };
  std::mutex done_mutex;  // on_done is never called twice at once
  const auto done = [&](size_t i) {
    if (!on_done) return;
    try {
      std::lock_guard<std::mutex> lock(done_mutex);
      on_done(i, results[i]);
    } catch (...) {
      fail();
    }
  };
  last_counts_.assign(workers_.size(), 0);

  // Each supervisor is synchronous, and a free worker takes the next candidate at once, so a
  // slow candidate on one GPU never holds up the others.
  on_every_worker([&](size_t w) {
    for (size_t i; !failed && (i = next++) < n;) {
      Prepared prepared = prepare(i);
      if (auto* finished = std::get_if<MeasureResult>(&prepared)) {
        results[i].result = std::move(*finished);
        done(i);
        continue;
      }
      MeasureRequest request = std::get<MeasureRequest>(std::move(prepared));
      {
        std::lock_guard<std::mutex> lock(best_mutex_);
        request.id = next_id_++;
        request.best_so_far_s = std::min(request.best_so_far_s, best_s_);
      }
      try {
        MeasureReply reply = workers_[w]->measure(std::move(request));
        if (reply.result.ok() && !reply.result.times_s.empty()) {
          std::lock_guard<std::mutex> lock(best_mutex_);
          best_s_ = std::min(best_s_, reply.result.median_s());
        }
        results[i].result = std::move(reply.result);
        results[i].device = devices_[w];
        ++last_counts_[w];
      } catch (...) {
        fail();
        continue;
      }
      done(i);
    }
  });
  if (error) std::rethrow_exception(error);
  return results;
}

int WorkerPool::restarts() const {
  int total = 0;
  for (const auto& w : workers_) total += w->restarts();
  return total;
}

}  // namespace cutune
