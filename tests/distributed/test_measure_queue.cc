// The coordinator's measure queue, without MPI: several tasks' batches through one queue,
// measured by any number of lanes, come back in proposal order with the same results.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "src/distributed/measure_queue.h"

using namespace cutune;
using namespace cutune::distributed;

namespace {

ConfigSpace small_space() {
  ConfigSpace s;
  s.define_choice("x", {1, 2, 3, 4, 5, 6, 7, 8});
  s.define_choice("y", {1, 2, 3, 4});
  return s;
}

// Answers with a time that identifies task and configuration; odd configurations of task 1
// fail. It sleeps a varying while, so that lanes finish out of order.
class FakeMeasurer final : public Measurer {
 public:
  explicit FakeMeasurer(int task) : task_(task) {}
  std::vector<MeasureResult> measure(const std::vector<Config>& batch) override {
    std::vector<MeasureResult> out;
    for (const Config& c : batch) {
      std::this_thread::sleep_for(std::chrono::microseconds(200 * ((c.index() * 7) % 5)));
      MeasureResult r;
      if (task_ == 1 && c.index() % 2) {
        r.status = MeasureStatus::runtime_error;
        r.error = "odd";
      } else {
        r.status = MeasureStatus::ok;
        r.times_s = {1e-3 * double(task_ * 100 + int(c.index()))};
      }
      out.push_back(r);
    }
    return out;
  }
  std::string device_name() const override { return "fake"; }
  std::string target_arch() const override { return "fake"; }

 private:
  int task_;
};

// Two tasks, each measuring three batches from its own thread, through `lanes` lanes.
std::vector<std::vector<MeasureResult>> run(int lanes, const std::string& device) {
  const ConfigSpace space = small_space();
  MeasureQueue queue;
  std::vector<std::vector<MeasureResult>> per_task(2);
  {
    LocalLanes local(
        queue, lanes, [](int task) { return std::make_unique<FakeMeasurer>(task); },
        {&space, &space}, device);
    std::vector<std::thread> producers;
    for (int t = 0; t < 2; ++t) {
      producers.emplace_back([&, t] {
        TaskMeasurer m(queue, t, "fake", "fake");
        for (int b = 0; b < 3; ++b) {
          std::vector<Config> batch;
          for (uint64_t i = 0; i < 9; ++i)
            batch.push_back(space.get((uint64_t(b) * 9 + i * 5 + t) % space.size()));
          for (MeasureResult& r : m.measure(batch)) per_task[size_t(t)].push_back(std::move(r));
        }
      });
    }
    for (std::thread& p : producers) p.join();
    queue.close();
  }
  return per_task;
}

}  // namespace

TEST_CASE("batches come back in proposal order whatever the number of lanes", "[distributed]") {
  const auto one = run(1, "");
  const auto four = run(4, "");
  REQUIRE(one.size() == 2);
  CHECK(one[0].size() == 27);
  CHECK(one == four);
  // And they are the answers of the configurations proposed, in that order.
  const ConfigSpace space = small_space();
  for (int t = 0; t < 2; ++t) {
    for (int b = 0; b < 3; ++b) {
      for (uint64_t i = 0; i < 9; ++i) {
        const uint64_t index = (uint64_t(b) * 9 + i * 5 + uint64_t(t)) % space.size();
        const MeasureResult& r = one[size_t(t)][size_t(b * 9) + i];
        if (t == 1 && index % 2) {
          CHECK(r.status == MeasureStatus::runtime_error);
        } else {
          CHECK(r.mean_s() == Approx(1e-3 * double(t * 100 + int(index))));
        }
      }
    }
  }
}

TEST_CASE("a lane's rank is recorded as the result's device", "[distributed]") {
  const auto results = run(2, "3");
  for (const auto& task : results)
    for (const MeasureResult& r : task)
      CHECK(r.details.gpu.device == std::variant<int64_t, std::string>("3"));
}

TEST_CASE("a batch's sink gets each result as it arrives, once, never two at once",
          "[distributed]") {
  const ConfigSpace space = small_space();
  MeasureQueue queue;
  std::vector<size_t> order;
  std::vector<MeasureResult> seen(12);
  std::atomic<int> inside{0};
  bool overlapped = false;
  std::vector<MeasureResult> results;
  {
    LocalLanes local(
        queue, 3, [](int task) { return std::make_unique<FakeMeasurer>(task); }, {&space},
        "");
    std::vector<Config> batch;
    for (uint64_t i = 0; i < 12; ++i) batch.push_back(space.get(i));
    results = queue.measure(0, batch, [&](size_t i, const MeasureResult& r) {
      if (inside++ > 0) overlapped = true;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      order.push_back(i);
      seen[i] = r;
      --inside;
    });
    queue.close();
  }
  CHECK(!overlapped);
  REQUIRE(order.size() == 12);
  CHECK(std::set<size_t>(order.begin(), order.end()).size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK(seen[i] == results[i]);
}
