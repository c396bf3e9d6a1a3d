// The multi-GPU worker pool, driven by fake workers (one per pretend GPU ordinal): a batch is
// spread over the workers as they become free, results come back in candidate order with the
// ordinal that measured them, and a worker that dies is replaced without losing the batch.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "src/measure/device_selection.h"
#include "src/measure/worker_pool.h"

using namespace cutune;

namespace {

std::string tool(const char* env, const char* built) {
  const char* moved = std::getenv(env);
  return moved ? moved : built;
}

WorkerOptions fake_worker() {
  WorkerOptions o;
  o.command = {tool("CUTUNE_TEST_WORKER", CUTUNE_TEST_WORKER), "--fake"};
  o.measure_timeout_s = 5;
  o.setup_timeout_s = 10;
  return o;
}

WorkerTask small_task() {
  WorkerTask t;
  t.arguments.resize(2);
  t.arguments[0] = {.name = "C", .elements = 16, .init = ArgInit::nan, .is_output = true};
  t.arguments[1] = {.name = "A", .elements = 8};
  return t;
}

MeasureRequest request(const std::string& behaviour) {
  MeasureRequest r;
  r.kernel_name = behaviour;
  r.cubin = std::vector<char>(64, 'x');
  r.args = {0, 1};
  return r;
}

}  // namespace

TEST_CASE("a batch spreads over four workers and survives one of them dying", "[worker][pool]") {
  WorkerPool pool(fake_worker(), {0, 1, 2, 5});
  pool.set_task(small_task(), {});
  // Slow candidates keep every worker busy long enough that all four take work; one crash in
  // the middle kills whichever worker takes it.
  std::vector<std::string> behaviours;
  for (int i = 0; i < 16; ++i) behaviours.push_back(i % 2 ? "fake_ok" : "fake_slow");
  behaviours[5] = "fake_crash";
  behaviours[11] = "fake_wrong";
  const std::vector<PoolResult> results = pool.run(
      behaviours.size(), [&](size_t i) { return WorkerPool::Prepared{request(behaviours[i])}; });
  REQUIRE(results.size() == behaviours.size());

  std::map<int, std::set<int>> pids_by_device;
  for (size_t i = 0; i < results.size(); ++i) {
    const PoolResult& r = results[i];
    INFO("candidate " << i << " (" << behaviours[i] << "): " << r.result.error);
    REQUIRE(std::set<int>{0, 1, 2, 5}.count(r.device) == 1);
    if (behaviours[i] == "fake_crash") {
      CHECK(r.result.status == MeasureStatus::runtime_error);
      CHECK(r.result.error.find("worker died") != std::string::npos);
      continue;
    }
    if (behaviours[i] == "fake_wrong") {
      CHECK(r.result.status == MeasureStatus::wrong_answer);
    } else {
      CHECK(r.result.status == MeasureStatus::ok);
      CHECK(r.result.times_s.size() == 1);
    }
    // Each worker was given its own GPU ordinal with the task.
    CHECK(r.result.details.gpu.ordinal() == r.device);
    pids_by_device[r.device].insert(int(r.result.details.worker.pid.value()));
  }
  CHECK(pids_by_device.size() == 4);  // every worker measured something
  int per_device_total = 0;
  for (int c : pool.last_counts()) {
    CHECK(c >= 1);
    per_device_total += c;
  }
  CHECK(per_device_total == int(behaviours.size()));
  CHECK(pool.restarts() == 1);

  // The pool goes on after the failure: the replaced worker is set up again on its GPU.
  const std::vector<PoolResult> again =
      pool.run(8, [&](size_t) { return WorkerPool::Prepared{request("fake_slow")}; });
  std::set<int> devices;
  for (const PoolResult& r : again) {
    INFO(r.device << ": " << r.result.error);
    CHECK(r.result.status == MeasureStatus::ok);
    CHECK(r.result.details.gpu.ordinal() == r.device);
    devices.insert(r.device);
  }
  CHECK(devices.size() == 4);
}

TEST_CASE("candidates finished before measuring keep their result and no device",
          "[worker][pool]") {
  WorkerPool pool(fake_worker(), {3, 4});
  pool.set_task(small_task(), {});
  const std::vector<PoolResult> results = pool.run(6, [](size_t i) -> WorkerPool::Prepared {
    if (i % 3 == 0) {
      MeasureResult compile_failed;
      compile_failed.status = MeasureStatus::compile_error;
      compile_failed.error = "candidate " + std::to_string(i);
      return compile_failed;
    }
    return request("fake_ok");
  });
  for (size_t i = 0; i < results.size(); ++i) {
    if (i % 3 == 0) {
      CHECK(results[i].device == -1);
      CHECK(results[i].result.status == MeasureStatus::compile_error);
      CHECK(results[i].result.error == "candidate " + std::to_string(i));
    } else {
      CHECK((results[i].device == 3 || results[i].device == 4));
      CHECK(results[i].result.ok());
    }
  }
  // Request ids are the pool's: every measured candidate got a distinct one.
  CHECK(pool.restarts() == 0);
}

TEST_CASE("a pool rejects an empty or repeated device list", "[worker][pool]") {
  CHECK_THROWS_AS(WorkerPool(fake_worker(), {}), std::invalid_argument);
  CHECK_THROWS_AS(WorkerPool(fake_worker(), {1, 1}), std::invalid_argument);
}

namespace {

DeviceInfo gpu(int ordinal, const std::string& name, int cc_major) {
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = name;
  d.cc_major = cc_major;
  return d;
}

}  // namespace

TEST_CASE("device selection picks GPUs of one kind", "[pool][devices]") {
  const std::vector<DeviceInfo> host = {gpu(0, "NVIDIA A100", 8), gpu(1, "NVIDIA H200", 9),
                                        gpu(2, "NVIDIA A100", 8), gpu(3, "NVIDIA H200", 9)};
  CHECK(select_devices("all", host) == std::vector<int>{0, 2});
  CHECK(select_devices("", host, "sm_90") == std::vector<int>{1, 3});
  CHECK(select_devices("3,1", host) == std::vector<int>{3, 1});
  CHECK(select_devices("2", host) == std::vector<int>{2});
  CHECK(select_devices("all", {}).empty());
  CHECK_THROWS_WITH(select_devices("0,x", {}), Catch::Contains("comma-separated"));
  CHECK_THROWS_WITH(select_devices("0,1", host), Catch::Contains("one kind"));
  CHECK_THROWS_WITH(select_devices("0,0", host), Catch::Contains("twice"));
  CHECK_THROWS_WITH(select_devices("7", host), Catch::Contains("no GPU 7"));
  CHECK_THROWS_WITH(select_devices("0,,1", host), Catch::Contains("comma-separated"));
  CHECK_THROWS_WITH(select_devices("x", host), Catch::Contains("comma-separated"));
  CHECK_THROWS_WITH(select_devices("all", host, "sm_75"), Catch::Contains("sm_75"));
}

TEST_CASE("the pool hands over each result as it arrives", "[worker][pool]") {
  WorkerPool pool(fake_worker(), {0, 1});
  pool.set_task(small_task(), {});
  // Candidate 0 is slow: the others finish (and are handed over) before it does.
  std::vector<size_t> order;
  std::vector<PoolResult> seen(6);
  const std::vector<PoolResult> results = pool.run(
      6,
      [&](size_t i) -> WorkerPool::Prepared {
        if (i == 3) {
          MeasureResult invalid;
          invalid.status = MeasureStatus::invalid;
          invalid.error = "rejected before measuring";
          return invalid;
        }
        return request(i == 0 ? "fake_slow" : "fake_ok");
      },
      [&](size_t i, const PoolResult& r) {
        order.push_back(i);
        seen[i] = r;
      });
  REQUIRE(order.size() == 6);
  CHECK(std::set<size_t>(order.begin(), order.end()).size() == 6);
  CHECK(order.back() == 0);  // the slow one arrived last
  for (size_t i = 0; i < 6; ++i) {
    CHECK(seen[i].result == results[i].result);
    CHECK(seen[i].device == results[i].device);
  }
  CHECK(results[3].result.status == MeasureStatus::invalid);
  CHECK(results[3].device == -1);
}
