#include "src/distributed/mpi_world.h"

#include <mpi.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/base/errors.h"
#include "src/measure/worker_protocol.h"

namespace cutune::distributed {

namespace {

enum Tag : int { kWork = 1, kResult = 2, kStop = 3 };

bool g_active = false;
int g_rank = 0;
int g_size = 1;

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

void send_json(const nlohmann::json& j, int to, int tag) {
  const std::string text = j.dump();
  MPI_Send(text.data(), int(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

nlohmann::json recv_json(const MPI_Status& probed) {
  int count = 0;
  MPI_Get_count(&probed, MPI_CHAR, &count);
  std::string text(size_t(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, probed.MPI_SOURCE, probed.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return text.empty() ? nlohmann::json::object() : nlohmann::json::parse(text);
}

nlohmann::json key_json(const TaskKey& k) {
  return {{"op", k.op},
          {"shape", k.shape},
          {"dtype", k.dtype},
          {"template", k.template_name},
          {"arch", k.target_arch},
          {"device", k.device_name}};
}

// CUTUNE_TEST_KILL_RANK="R:N": rank R dies of SIGKILL after measuring N candidates, so that a
// test can check what an aborted job leaves behind.
int kill_after_for_this_rank() {
  const char* spec = std::getenv("CUTUNE_TEST_KILL_RANK");
  if (spec == nullptr) return -1;
  int rank = -1, after = -1;
  if (std::sscanf(spec, "%d:%d", &rank, &after) != 2 || rank != g_rank) return -1;
  return after;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;
  int provided = 0;
  // Rank 0 talks MPI from its RemoteLanes thread, never from two threads at once.
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_active = true;
}

MpiSession::~MpiSession() {
  if (g_active) MPI_Finalize();
  g_active = false;
}

bool mpi_active() { return g_active; }
int mpi_rank() { return g_rank; }
int mpi_size() { return g_size; }

void abort_job(int code) {
  if (g_active && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

RemoteLanes::RemoteLanes(MeasureQueue& queue, std::vector<TaskKey> keys,
                         std::vector<const ConfigSpace*> spaces, int inflight)
    : keys_(std::move(keys)),
      spaces_(std::move(spaces)),
      thread_(&RemoteLanes::loop, this, std::ref(queue), inflight) {}

RemoteLanes::~RemoteLanes() { thread_.join(); }

void RemoteLanes::loop(MeasureQueue& queue, int inflight) {
  std::vector<int> busy(size_t(g_size), 0);
  std::unordered_map<uint64_t, WorkItem> sent;
  for (;;) {
    bool progressed = false;
    // Hand out work round-robin, one item per rank per pass, so ranks fill evenly.
    for (bool any = true; any;) {
      any = false;
      for (int r = 1; r < g_size; ++r) {
        if (busy[size_t(r)] >= inflight) continue;
        std::optional<WorkItem> item = queue.take(/*wait=*/false);
        if (!item) break;
        const size_t t = size_t(item->task);
        send_json({{"id", item->id},
                   {"task", item->task},
                   {"config", item->config_index},
                   {"key", key_json(keys_.at(t))},
                   {"knobs", spaces_.at(t)->get(item->config_index).to_json().at("knobs")}},
                  r, kWork);
        sent.emplace(item->id, *item);
        ++busy[size_t(r)];
        any = progressed = true;
      }
    }
    for (;;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kResult, MPI_COMM_WORLD, &flag, &status);
      if (!flag) break;
      const nlohmann::json j = recv_json(status);
      const uint64_t id = j.at("id").get<uint64_t>();
      auto it = sent.find(id);
      CUTUNE_CHECK(it != sent.end(),
                   fmt::format("rank {} answered unknown item {}", status.MPI_SOURCE, id));
      MeasureResult result = measure_result_from_json(j.at("result"));
      queue.complete(it->second, std::move(result), j.at("device").get<std::string>());
      sent.erase(it);
      --busy[size_t(status.MPI_SOURCE)];
      progressed = true;
    }
    if (sent.empty() && queue.drained()) break;
    // Answers take milliseconds (a compile, a measurement); a short nap costs little latency.
    if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (int r = 1; r < g_size; ++r) send_json(nlohmann::json::object(), r, kStop);
}

namespace {

// An item this rank can measure as asked: its task is this rank's task of that index, the
// configuration the same knob values, and the measurer's device the task's. Checked once per
// task (the device) and per item (the rest).
void check_item(LocalLane& lane, const std::vector<TaskKey>& keys, const WorkItem& item,
                const nlohmann::json& j) {
  if (item.task < 0 || size_t(item.task) >= keys.size())
    throw UserError(
        fmt::format("rank {}: work for task {}, but this rank has {} tasks (every "
                    "rank must run the same command line)",
                    g_rank, item.task, keys.size()));
  // The task (built from this rank's command line) and the configuration must be rank 0's;
  // the device kind and target are those of this rank's measurer, which must be rank 0's.
  const TaskKey& own = keys[size_t(item.task)];
  const nlohmann::json& sent = j.at("key");
  const nlohmann::json mine = key_json(own);
  for (const char* field : {"op", "shape", "dtype", "template"})
    if (sent.at(field) != mine.at(field))
      throw UserError(
          fmt::format("rank {}: task {} has {} {} here but {} on rank 0 (every rank "
                      "must run the same command line)",
                      g_rank, item.task, field, mine.at(field).dump(), sent.at(field).dump()));
  static thread_local std::vector<bool> device_checked;
  if (device_checked.size() < keys.size()) device_checked.resize(keys.size(), false);
  if (!device_checked[size_t(item.task)]) {
    const std::string device = lane.device_name(item.task);
    const std::string arch = lane.target_arch(item.task);
    if (device != sent.at("device").get<std::string>() ||
        arch != sent.at("arch").get<std::string>())
      throw UserError(fmt::format(
          "rank {} measures on '{}' ({}) but the task targets '{}' ({}), rank 0's: GPUs of "
          "different kinds are not mixed in one task",
          g_rank, device, arch, sent.at("device").get<std::string>(),
          sent.at("arch").get<std::string>()));
    device_checked[size_t(item.task)] = true;
  }
  if (lane.space(item.task).get(item.config_index).to_json().at("knobs") != j.at("knobs"))
    throw UserError(
        fmt::format("rank {}: configuration {} of task {} has other knob values "
                    "here than on rank 0 (every rank must run the same build)",
                    g_rank, item.config_index, item.task));
}

}  // namespace

void serve_rank(LocalLane& lane, const std::vector<TaskKey>& keys) {
  const int kill_after = kill_after_for_this_rank();
  int measured = 0;
  for (;;) {
    // Not MPI_Probe: Open MPI's blocking calls spin, and an idle rank must leave the cores to
    // the ranks that work (several ranks may share a core; rank 0 searches while they wait).
    MPI_Status status;
    for (int flag = 0;;) {
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (flag) break;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (status.MPI_TAG == kStop) {
      recv_json(status);
      return;
    }
    // One candidate at a time, its answer sent at once: rank 0 keeps a few more queued here,
    // so the rank never waits for a round trip between measurements.
    const nlohmann::json j = recv_json(status);
    const WorkItem item{j.at("id").get<uint64_t>(), j.at("task").get<int>(),
                        j.at("config").get<uint64_t>()};
    check_item(lane, keys, item, j);
    MeasureResult result = std::move(lane.measure({item})[0]);
    if (kill_after >= 0 && measured >= kill_after) raise(SIGKILL);
    ++measured;
    std::string device = std::to_string(g_rank);
    if (const std::optional<int64_t> ordinal = result.details.gpu.ordinal())
      device += ":" + std::to_string(*ordinal);
    send_json({{"id", item.id}, {"device", device}, {"result", to_json(result)}}, 0, kResult);
  }
}

}  // namespace cutune::distributed
