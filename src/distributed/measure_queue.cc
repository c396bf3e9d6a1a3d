#include "src/distributed/measure_queue.h"

#include <fmt/format.h>

#include "src/base/errors.h"

namespace cutune::distributed {

std::vector<MeasureResult> MeasureQueue::measure(int task, const std::vector<Config>& batch,
                                                 const ResultSink& on_result) {
  std::vector<MeasureResult> results(batch.size());
  if (batch.empty()) return results;
  auto remaining = std::make_shared<size_t>(batch.size());
  std::unique_lock<std::mutex> lock(mutex_);
  CUTUNE_CHECK(!closed_, "a batch was queued after the measure queue closed");
  for (size_t i = 0; i < batch.size(); ++i) {
    WorkItem item{next_id_++, task, batch[i].index()};
    pending_.emplace(item.id, Pending{&results, on_result ? &on_result : nullptr, i, remaining});
    queue_.push_back(item);
  }
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return *remaining == 0; });
  return results;
}

std::optional<WorkItem> MeasureQueue::take(bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wait) work_cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
  if (queue_.empty()) return std::nullopt;
  WorkItem item = queue_.front();
  queue_.pop_front();
  return item;
}

void MeasureQueue::complete(const WorkItem& item, MeasureResult result, const std::string& device) {
  if (!device.empty()) {
    const std::optional<int64_t> ordinal = result.details.gpu.ordinal();
    result.details.gpu.device = ordinal ? fmt::format("{}:{}", device, *ordinal) : device;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(item.id);
  CUTUNE_CHECK(it != pending_.end(), fmt::format("result for unknown work item {}", item.id));
  (*it->second.results)[it->second.slot] = std::move(result);
  if (it->second.sink != nullptr)
    (*it->second.sink)(it->second.slot, (*it->second.results)[it->second.slot]);
  if (--*it->second.remaining == 0) done_cv_.notify_all();
  pending_.erase(it);
}

void MeasureQueue::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  work_cv_.notify_all();
}

bool MeasureQueue::drained() {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_ && queue_.empty();
}

LocalLane::LocalLane(MeasurerFactory factory, std::vector<const ConfigSpace*> spaces)
    : factory_(std::move(factory)), spaces_(std::move(spaces)) {}

std::vector<MeasureResult> LocalLane::measure(const std::vector<WorkItem>& items) {
  std::vector<MeasureResult> out(items.size());
  // Consecutive items of one task go to its measurer together (a GPU measurer compiles a
  // batch ahead and spreads it over its GPUs).
  for (size_t begin = 0; begin < items.size();) {
    const int task = items[begin].task;
    CUTUNE_CHECK(task >= 0 && size_t(task) < spaces_.size(),
                 fmt::format("work item for unknown task {}", task));
    size_t end = begin;
    std::vector<Config> batch;
    while (end < items.size() && items[end].task == task)
      batch.push_back(spaces_[size_t(task)]->get(items[end++].config_index));
    std::vector<MeasureResult> r = measurer(task).measure(batch);
    CUTUNE_CHECK(r.size() == batch.size(), "a measurer returned the wrong number of results");
    for (size_t i = 0; i < r.size(); ++i) out[begin + i] = std::move(r[i]);
    begin = end;
  }
  return out;
}

Measurer& LocalLane::measurer(int task) {
  std::unique_ptr<Measurer>& m = measurers_[task];
  if (!m) m = factory_(task);
  return *m;
}

std::string LocalLane::device_name(int task) { return measurer(task).device_name(); }
std::string LocalLane::target_arch(int task) { return measurer(task).target_arch(); }

LocalLanes::LocalLanes(MeasureQueue& queue, int lanes, const MeasurerFactory& factory,
                       const std::vector<const ConfigSpace*>& spaces, std::string device_prefix) {
  for (int l = 0; l < lanes; ++l)
    threads_.emplace_back([&queue, factory, spaces, device = device_prefix] {
      LocalLane lane(factory, spaces);
      while (std::optional<WorkItem> item = queue.take()) {
        MeasureResult r = lane.measure({*item})[0];
        queue.complete(*item, std::move(r), device);
      }
    });
}

LocalLanes::~LocalLanes() {
  for (std::thread& t : threads_) t.join();
}

}  // namespace cutune::distributed
