#include "src/measure/worker_protocol.h"

#include "src/measure/correctness.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace cutune {

namespace {
constexpr const char* kArgKindNames[] = {"buffer", "scalar", "constant"};
constexpr const char* kArgInitNames[] = {"seeded", "blob", "nan", "zero"};
}  // namespace

const char* to_string(ArgKind kind) { return kArgKindNames[int(kind)]; }
const char* to_string(ArgInit init) { return kArgInitNames[int(init)]; }

int64_t WorkerArgument::bytes() const { return elements * dtype_bytes(elem); }

int64_t WorkerTask::blob_argument_bytes() const {
  int64_t n = 0;
  for (const WorkerArgument& a : arguments) n += a.init == ArgInit::blob ? a.bytes() : 0;
  return n;
}

int64_t WorkerTask::expected_bytes() const {
  int64_t n = 0;
  if (reference == ReferenceKind::host || reference == ReferenceKind::file)
    for (const WorkerArgument& a : arguments) n += a.is_output ? a.elements * 4 : 0;
  return n;
}

int64_t WorkerTask::blob_bytes() const {
  return blob_argument_bytes() + expected_bytes() +
         (reference == ReferenceKind::kernel ? reference_cubin_bytes : 0);
}

namespace {

constexpr uint32_t kMagic = 0x4b575443;  // "CTWK" read as little-endian bytes
constexpr uint64_t kMaxJson = 64ull << 20;
constexpr uint64_t kMaxBlob = 8ull << 30;

struct FrameHeader {
  uint32_t magic;
  uint32_t kind;
  uint64_t json_bytes;
  uint64_t blob_bytes;
};
static_assert(sizeof(FrameHeader) == 24);

// Waits until `fd` is ready for `events` or the deadline passes.
IoStatus wait_ready(int fd, short events, double deadline) {
  for (;;) {
    int timeout_ms = -1;
    if (std::isfinite(deadline)) {
      double left = deadline - monotonic_seconds();
      if (left <= 0) return IoStatus::timeout;
      timeout_ms = static_cast<int>(std::min(left * 1000.0 + 1.0, 1e9));
    }
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoStatus::closed;
    if (n == 0) continue;  // re-check the deadline
    if (p.revents & events) return IoStatus::ok;
    return IoStatus::closed;  // POLLHUP / POLLERR without data
  }
}

IoStatus write_all(int fd, const char* data, size_t size, double deadline) {
  while (size > 0) {
    if (IoStatus s = wait_ready(fd, POLLOUT, deadline); s != IoStatus::ok) return s;
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == ENOTSOCK) n = write(fd, data, size);  // a pipe
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return IoStatus::closed;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return IoStatus::ok;
}

IoStatus read_all(int fd, char* data, size_t size, double deadline) {
  while (size > 0) {
    if (IoStatus s = wait_ready(fd, POLLIN, deadline); s != IoStatus::ok) {
      // POLLHUP with bytes still buffered is reported as readable by Linux, so `closed`
      // here really means nothing more will come.
      return s;
    }
    ssize_t n = read(fd, data, size);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return IoStatus::closed;
    }
    if (n == 0) return IoStatus::closed;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return IoStatus::ok;
}

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw std::invalid_argument(fmt::format("worker message lacks field '{}'", name));
  return j.at(name);
}

template <typename T>
T get(const nlohmann::json& j, const char* name) {
  try {
    return field(j, name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("worker message field '{}': {}", name, e.what()));
  }
}

template <typename T>
T get_or(const nlohmann::json& j, const char* name, T fallback) {
  return j.is_object() && j.contains(name) ? get<T>(j, name) : fallback;
}

// JSON has no infinity; a missing best time means "none yet".
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

Dim3 dim3_from_json(const nlohmann::json& j) {
  if (!j.is_array() || j.size() != 3) throw std::invalid_argument("worker message: bad dim3");
  return Dim3{j[0].get<uint32_t>(), j[1].get<uint32_t>(), j[2].get<uint32_t>()};
}

// The names of an enum's values on the wire, in the enum's order.
constexpr const char* kReferenceNames[] = {"none", "host", "file", "baseline", "kernel"};

template <class E, size_t N>
E parse_name(const char* const (&names)[N], const std::string& s, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  throw std::invalid_argument(fmt::format("worker message: unknown {} '{}'", what, s));
}

}  // namespace

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

IoStatus write_frame(int fd, const Frame& frame, double deadline) {
  const std::string json = frame.header.dump();
  FrameHeader h{kMagic, static_cast<uint32_t>(frame.kind), json.size(), frame.blob.size()};
  if (IoStatus s = write_all(fd, reinterpret_cast<const char*>(&h), sizeof h, deadline);
      s != IoStatus::ok)
    return s;
  if (IoStatus s = write_all(fd, json.data(), json.size(), deadline); s != IoStatus::ok) return s;
  return write_all(fd, frame.blob.data(), frame.blob.size(), deadline);
}

IoStatus read_frame(int fd, Frame& frame, double deadline) {
  FrameHeader h{};
  if (IoStatus s = read_all(fd, reinterpret_cast<char*>(&h), sizeof h, deadline); s != IoStatus::ok)
    return s;
  if (h.magic != kMagic || h.kind < 1 || h.kind > 6 || h.json_bytes > kMaxJson ||
      h.blob_bytes > kMaxBlob)
    return IoStatus::malformed;
  std::string json(h.json_bytes, '\0');
  if (IoStatus s = read_all(fd, json.data(), json.size(), deadline); s != IoStatus::ok) return s;
  frame.kind = static_cast<FrameKind>(h.kind);
  frame.blob.resize(h.blob_bytes);
  if (IoStatus s = read_all(fd, frame.blob.data(), frame.blob.size(), deadline); s != IoStatus::ok)
    return s;
  frame.header = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (frame.header.is_discarded() || !frame.header.is_object()) return IoStatus::malformed;
  return IoStatus::ok;
}

nlohmann::json to_json(const TimingOptions& o) {
  return {{"flush_l2", o.flush_l2},
          {"prefer_cupti", o.prefer_cupti},
          {"warmup", o.warmup},
          {"min_repeats", o.min_repeats},
          {"max_repeats", o.max_repeats},
          {"min_seconds", o.min_seconds},
          {"max_seconds", o.max_seconds},
          {"target_rel_ci", o.target_rel_ci},
          {"early_stop_factor", o.early_stop_factor}};
}

TimingOptions timing_options_from_json(const nlohmann::json& j) {
  TimingOptions o;
  o.flush_l2 = get<bool>(j, "flush_l2");
  o.prefer_cupti = get<bool>(j, "prefer_cupti");
  o.warmup = get<int>(j, "warmup");
  o.min_repeats = get<int>(j, "min_repeats");
  o.max_repeats = get<int>(j, "max_repeats");
  o.min_seconds = get<double>(j, "min_seconds");
  o.max_seconds = get<double>(j, "max_seconds");
  o.target_rel_ci = get<double>(j, "target_rel_ci");
  o.early_stop_factor = get<double>(j, "early_stop_factor");
  return o;
}

nlohmann::json to_json(const LaunchSpec& l) {
  return {{"grid", {l.grid.x, l.grid.y, l.grid.z}},
          {"block", {l.block.x, l.block.y, l.block.z}},
          {"static_smem_bytes", l.static_smem_bytes},
          {"dynamic_smem_bytes", l.dynamic_smem_bytes},
          {"persistent_blocks_per_sm", l.persistent_blocks_per_sm},
          {"cluster_x", l.cluster_x}};
}

LaunchSpec launch_spec_from_json(const nlohmann::json& j) {
  LaunchSpec l;
  l.grid = dim3_from_json(field(j, "grid"));
  l.block = dim3_from_json(field(j, "block"));
  l.static_smem_bytes = get<uint32_t>(j, "static_smem_bytes");
  l.dynamic_smem_bytes = get<uint32_t>(j, "dynamic_smem_bytes");
  l.persistent_blocks_per_sm = j.value("persistent_blocks_per_sm", 0u);
  l.cluster_x = j.value("cluster_x", 1u);
  return l;
}

nlohmann::json to_json(const MeasureResult& r) {
  return {{"status", std::string(to_string(r.status))},
          {"times", r.times_s},
          {"compile_s", r.compile_s},
          {"error", r.error},
          {"timer", std::string(to_string(r.timer))},
          {"max_rel_error", r.max_rel_error},
          {"extra", to_json(r.details)}};
}

MeasureResult measure_result_from_json(const nlohmann::json& j) {
  MeasureResult r;
  auto status = parse_measure_status(get<std::string>(j, "status"));
  auto timer = parse_timer_kind(get<std::string>(j, "timer"));
  if (!status || !timer) throw std::invalid_argument("worker message: unknown status or timer");
  r.status = *status;
  r.timer = *timer;
  r.times_s = get<std::vector<double>>(j, "times");
  r.compile_s = get<double>(j, "compile_s");
  r.error = get<std::string>(j, "error");
  r.max_rel_error = get<double>(j, "max_rel_error");
  const nlohmann::json& extra = field(j, "extra");
  try {
    r.details = measure_details_from_json(extra, "extra");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("worker message: {}", e.what()));
  }
  return r;
}

Frame task_frame(const WorkerTask& t, std::vector<char> blob) {
  Frame f;
  f.kind = FrameKind::task;
  nlohmann::json arguments = nlohmann::json::array();
  for (const WorkerArgument& a : t.arguments)
    arguments.push_back({{"name", a.name},
                         {"kind", to_string(a.kind)},
                         {"elem", a.elem},
                         {"elements", a.elements},
                         {"init", to_string(a.init)},
                         {"is_output", a.is_output},
                         {"reset_each_run", a.reset_each_run},
                         {"tolerance", a.tolerance}});
  f.header = {{"device", t.device},
              {"seed", t.seed},
              {"arguments", arguments},
              {"reference", kReferenceNames[int(t.reference)]},
              {"reference_kernel", t.reference_kernel},
              {"reference_launch", to_json(t.reference_launch)},
              {"reference_args", t.reference_args},
              {"reference_cubin_bytes", t.reference_cubin_bytes},
              {"baseline", t.baseline.to_json()},
              {"timing", to_json(t.timing)}};
  f.blob = std::move(blob);
  return f;
}

WorkerTask task_from_frame(const Frame& f) {
  if (f.kind != FrameKind::task) throw std::invalid_argument("worker message: not a task");
  const nlohmann::json& j = f.header;
  WorkerTask t;
  t.device = get<int>(j, "device");
  t.seed = get<uint64_t>(j, "seed");
  for (const nlohmann::json& x : field(j, "arguments")) {
    WorkerArgument a;
    a.name = get<std::string>(x, "name");
    a.kind = parse_name<ArgKind>(kArgKindNames, get<std::string>(x, "kind"), "argument kind");
    a.elem = get<std::string>(x, "elem");
    a.elements = get<int64_t>(x, "elements");
    a.init = parse_name<ArgInit>(kArgInitNames, get<std::string>(x, "init"), "argument init");
    a.is_output = get<bool>(x, "is_output");
    a.reset_each_run = get<bool>(x, "reset_each_run");
    a.tolerance = get<double>(x, "tolerance");
    a.bytes();  // an unknown element type is a malformed task
    if (a.init == ArgInit::seeded) round_to_storage(0.0f, a.elem);  // floating types only
    if (a.elements < 0)
      throw std::invalid_argument(fmt::format("worker message: argument '{}' has {} elements",
                                              a.name, a.elements));
    t.arguments.push_back(std::move(a));
  }
  t.reference = parse_name<ReferenceKind>(kReferenceNames, get<std::string>(j, "reference"),
                                          "reference");
  t.reference_kernel = get<std::string>(j, "reference_kernel");
  t.reference_launch = launch_spec_from_json(field(j, "reference_launch"));
  t.reference_args = get<std::vector<int>>(j, "reference_args");
  t.reference_cubin_bytes = get<int64_t>(j, "reference_cubin_bytes");
  t.baseline = BaselineSpec::from_json(field(j, "baseline"));
  t.timing = timing_options_from_json(field(j, "timing"));
  if (t.blob_bytes() != int64_t(f.blob.size()))
    throw std::invalid_argument(fmt::format("worker message: the task's blob has {} bytes, not {}",
                                            f.blob.size(), t.blob_bytes()));
  return t;
}

namespace {

// Tensor maps travel as their description: {"buffer", "dtype", "dims", "row_stride",
// "box", "element_strides", "swizzle", "l2"} or null for a parameter that is not one.
nlohmann::json maps_to_json(const std::vector<std::optional<ir::TensorMapDesc>>& maps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : maps) {
    if (!m) {
      out.push_back(nullptr);
      continue;
    }
    out.push_back({{"buffer", m->buffer},
                   {"dtype", ir::dtype_name(m->dtype)},
                   {"dims", {m->dims[0], m->dims[1]}},
                   {"row_stride", m->row_stride_bytes},
                   {"box", {m->box[0], m->box[1]}},
                   {"element_strides", {m->element_strides[0], m->element_strides[1]}},
                   {"swizzle", static_cast<int>(m->swizzle)},
                   {"l2", static_cast<int>(m->l2_promotion)}});
  }
  return out;
}

std::vector<std::optional<ir::TensorMapDesc>> maps_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw std::invalid_argument("worker message: 'maps' is not an array");
  std::vector<std::optional<ir::TensorMapDesc>> maps;
  for (const nlohmann::json& m : j) {
    if (m.is_null()) {
      maps.emplace_back();
      continue;
    }
    try {
      ir::TensorMapDesc d;
      d.buffer = m.at("buffer").get<std::string>();
      const std::string dtype = m.at("dtype").get<std::string>();
      bool known = false;
      for (ir::DType t : {ir::DType::Float16, ir::DType::BFloat16, ir::DType::Float32,
                          ir::DType::Int32, ir::DType::UInt32}) {
        if (ir::dtype_name(t) == dtype) d.dtype = t, known = true;
      }
      if (!known) throw std::invalid_argument("unknown dtype " + dtype);
      for (int i = 0; i < 2; ++i) {
        d.dims[i] = m.at("dims").at(i).get<int64_t>();
        d.box[i] = m.at("box").at(i).get<int>();
        d.element_strides[i] = m.at("element_strides").at(i).get<int>();
      }
      d.row_stride_bytes = m.at("row_stride").get<int64_t>();
      const int swizzle = m.at("swizzle").get<int>(), l2 = m.at("l2").get<int>();
      if (swizzle < 0 || swizzle > 3 || l2 < 0 || l2 > 3) {
        throw std::invalid_argument("swizzle or l2 out of range");
      }
      d.swizzle = static_cast<ir::TmaSwizzle>(swizzle);
      d.l2_promotion = static_cast<ir::TmaL2Promotion>(l2);
      maps.emplace_back(std::move(d));
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(std::string("worker message: malformed tensor map: ") +
                                  e.what());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("worker message: malformed tensor map: ") +
                                  e.what());
    }
  }
  return maps;
}

}  // namespace

Frame measure_frame(const MeasureRequest& r) {
  Frame f;
  f.kind = FrameKind::measure;
  f.header = {{"id", r.id},
              {"what", r.what == MeasureWhat::kernel ? "kernel" : "baseline"},
              {"source", r.source},
              {"kernel_name", r.kernel_name},
              {"launch", to_json(r.launch)},
              {"args", r.args},
              {"maps", maps_to_json(r.maps)},
              {"check", r.check},
              {"best_so_far_s", finite_or_null(r.best_so_far_s)}};
  f.blob = r.cubin;
  return f;
}

MeasureRequest measure_request_from_frame(Frame f) {
  if (f.kind != FrameKind::measure) throw std::invalid_argument("worker message: not a measure");
  const nlohmann::json& j = f.header;
  MeasureRequest r;
  r.id = get<uint64_t>(j, "id");
  const std::string what = get<std::string>(j, "what");
  if (what != "kernel" && what != "baseline")
    throw std::invalid_argument(fmt::format("worker message: unknown 'what' {}", what));
  r.what = what == "kernel" ? MeasureWhat::kernel : MeasureWhat::baseline;
  r.source = get<std::string>(j, "source");
  r.kernel_name = get<std::string>(j, "kernel_name");
  r.launch = launch_spec_from_json(field(j, "launch"));
  r.args = get<std::vector<int>>(j, "args");
  if (j.contains("maps")) r.maps = maps_from_json(j.at("maps"));
  r.check = get<bool>(j, "check");
  const nlohmann::json& best = field(j, "best_so_far_s");
  r.best_so_far_s = best.is_number() ? best.get<double>() : std::numeric_limits<double>::infinity();
  r.cubin = std::move(f.blob);
  return r;
}

Frame reply_frame(const MeasureReply& r) {
  Frame f;
  f.kind = FrameKind::result;
  f.header = {
      {"id", r.id}, {"result", to_json(r.result)}, {"context_poisoned", r.context_poisoned}};
  return f;
}

MeasureReply reply_from_frame(const Frame& f) {
  if (f.kind != FrameKind::result) throw std::invalid_argument("worker message: not a result");
  MeasureReply r;
  r.id = get<uint64_t>(f.header, "id");
  r.result = measure_result_from_json(field(f.header, "result"));
  r.context_poisoned = get_or<bool>(f.header, "context_poisoned", false);
  return r;
}

}  // namespace cutune
