// The worker protocol and its supervision, driven by the fake worker: no GPU needed.

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <set>
#include <thread>

#include "kernels/template.h"
#include "src/measure/correctness.h"
#include "src/measure/gpu_measurer.h"
#include "src/measure/worker_process.h"
#include "src/measure/worker_protocol.h"

using namespace cutune;

namespace {

// The worker (and example) binaries: from the environment where a pack moved them, else the
// build's own paths.
std::string tool(const char* env, const char* built) {
  const char* moved = std::getenv(env);
  return moved ? moved : built;
}

WorkerArgument argument(const std::string& name, const std::string& elem, int64_t elements,
                        bool is_output) {
  WorkerArgument a;
  a.name = name;
  a.elem = elem;
  a.elements = elements;
  a.is_output = is_output;
  a.init = is_output ? ArgInit::nan : ArgInit::seeded;
  return a;
}

// A template-like task: an output C, an input A, nothing to check against (an empty blob).
WorkerTask small_task() {
  WorkerTask t;
  t.seed = 7;
  t.arguments = {argument("C", "float32", 16, true), argument("A", "float32", 8, false)};
  return t;
}

MeasureRequest request(uint64_t id, const std::string& behaviour) {
  MeasureRequest r;
  r.id = id;
  r.kernel_name = behaviour;
  r.cubin = std::vector<char>(1000, 'x');
  r.args = {0, 1};
  return r;
}

WorkerOptions fake_worker(double timeout_s = 2.0) {
  WorkerOptions o;
  o.command = {tool("CUTUNE_TEST_WORKER", CUTUNE_TEST_WORKER), "--fake"};
  o.measure_timeout_s = timeout_s;
  o.setup_timeout_s = 10;
  return o;
}

}  // namespace

TEST_CASE("frames round-trip over a socket with their blob", "[worker]") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  MeasureRequest r = request(42, "k");
  r.launch.grid = {3, 2, 1};
  r.launch.block = {128, 1, 1};
  r.launch.dynamic_smem_bytes = 65536;
  r.best_so_far_s = 1.5e-4;
  r.cubin.assign(300000, 'q');  // larger than a socket buffer: needs a concurrent reader
  Frame in;
  IoStatus read_status = IoStatus::closed;
  std::thread reader([&] { read_status = read_frame(fds[1], in, monotonic_seconds() + 5); });
  REQUIRE(write_frame(fds[0], measure_frame(r), monotonic_seconds() + 5) == IoStatus::ok);
  reader.join();
  REQUIRE(read_status == IoStatus::ok);
  const MeasureRequest back = measure_request_from_frame(in);
  CHECK(back.id == 42);
  CHECK(back.kernel_name == "k");
  CHECK(back.launch.grid == Dim3{3, 2, 1});
  CHECK(back.launch.block == Dim3{128, 1, 1});
  CHECK(back.launch.dynamic_smem_bytes == 65536);
  CHECK(back.args == std::vector<int>{0, 1});
  CHECK(back.best_so_far_s == 1.5e-4);
  CHECK(back.cubin == r.cubin);
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("an infinite best time and a result survive JSON", "[worker]") {
  MeasureRequest r = request(1, "k");
  CHECK(std::isinf(measure_request_from_frame(measure_frame(r)).best_so_far_s));

  MeasureReply reply;
  reply.id = 9;
  reply.result.status = MeasureStatus::wrong_answer;
  reply.result.times_s = {1e-3, 2e-3};
  reply.result.timer = TimerKind::cupti;
  reply.result.max_rel_error = 0.25;
  reply.result.error = "bad";
  reply.result.details.other = {{"a", 1}};
  reply.result.details.rounds.round_medians_s = std::vector<double>{1e-3, 2e-3};
  GpuState no_nvml;
  no_nvml.available = false;
  no_nvml.error = "no NVML";
  reply.result.details.gpu.gpu_before = no_nvml;
  reply.context_poisoned = true;
  const MeasureReply back = reply_from_frame(reply_frame(reply));
  CHECK(back.id == 9);
  CHECK(back.result == reply.result);
  CHECK(back.context_poisoned);
}

TEST_CASE("a task round-trips", "[worker]") {
  WorkerTask t = small_task();
  t.reference = ReferenceKind::baseline;
  t.baseline =
      BaselineSpec::of(GemmBaseline{.m = 5,
                                    .n = 6,
                                    .k = 7,
                                    .b_transposed = true,
                                    .input = ir::DType::Float16,
                                    .output = ir::DType::Float32});
  t.arguments[0].init = ArgInit::zero;
  t.arguments[0].reset_each_run = true;
  t.arguments[0].tolerance = 0.125;
  t.arguments[1].elem = "bfloat16";
  t.timing.flush_l2 = false;
  t.timing.max_repeats = 33;
  const WorkerTask back = task_from_frame(task_frame(t, {}));
  CHECK(back.seed == 7);
  CHECK(back.arguments.size() == 2);
  CHECK(back.arguments[0].is_output);
  CHECK(back.arguments[1].elements == 8);
  CHECK(back.reference == ReferenceKind::baseline);
  REQUIRE(back.baseline.kind == BaselineSpec::Kind::gemm);
  CHECK(back.baseline.gemm == t.baseline.gemm);
  CHECK(back.arguments[0].init == ArgInit::zero);
  CHECK(back.arguments[0].reset_each_run);
  CHECK(back.arguments[0].tolerance == 0.125);
  CHECK(back.arguments[1].init == ArgInit::seeded);
  CHECK(back.arguments[1].elem == "bfloat16");
  CHECK(back.arguments[1].bytes() == 16);
  CHECK_FALSE(back.timing.flush_l2);
  CHECK(back.timing.max_repeats == 33);

  // A blob of the wrong size, an unknown element type, or a seeded integer is refused.
  CHECK_THROWS_WITH(task_from_frame(task_frame(t, {'a', 'b'})),
                    Catch::Contains("blob has 2 bytes, not 0"));
  t.arguments[1].elem = "complex64";
  CHECK_THROWS_WITH(task_from_frame(task_frame(t, {})), Catch::Contains("complex64"));
  t.arguments[1].elem = "int32";
  CHECK_THROWS_WITH(task_from_frame(task_frame(t, {})),
                    Catch::Contains("not a storage type of generated values"));
}

TEST_CASE("garbage and truncated frames are reported and not trusted", "[worker]") {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  const char junk[32] = "definitely not a frame header..";
  REQUIRE(write(fds[0], junk, sizeof junk) == sizeof junk);
  Frame f;
  CHECK(read_frame(fds[1], f, monotonic_seconds() + 1) == IoStatus::malformed);
  CHECK(read_frame(fds[1], f, monotonic_seconds() + 0.05) == IoStatus::timeout);
  close(fds[0]);
  CHECK(read_frame(fds[1], f, monotonic_seconds() + 1) == IoStatus::closed);
  close(fds[1]);
}

TEST_CASE("a malformed message field is a one-line invalid_argument", "[worker]") {
  Frame f = measure_frame(request(1, "k"));
  f.header.erase("launch");
  CHECK_THROWS_AS(measure_request_from_frame(f), std::invalid_argument);
}

TEST_CASE("the fake worker answers and keeps its process between requests", "[worker]") {
  WorkerSupervisor s(fake_worker());
  s.set_task(small_task(), {});
  const MeasureReply a = s.measure(request(1, "fake_ok"));
  const MeasureReply b = s.measure(request(2, "fake_ok"));
  REQUIRE(a.result.ok());
  CHECK(a.result.times_s == std::vector<double>{2e-3});
  CHECK(a.result.details.compile.cubin_bytes == 1000);
  CHECK(a.result.details.worker.pid == b.result.details.worker.pid);
  CHECK(s.restarts() == 0);
}

TEST_CASE("every way a worker fails becomes a result and the worker is replaced", "[worker]") {
  struct Case {
    const char* behaviour;
    MeasureStatus status;
    const char* error_part;
  };
  const Case cases[] = {
      {"fake_crash", MeasureStatus::runtime_error, "signal 11"},
      {"fake_abort", MeasureStatus::runtime_error, "signal 6"},
      {"fake_exit", MeasureStatus::runtime_error, "exited with code 3"},
      {"fake_sleep", MeasureStatus::timeout, "watchdog"},
      {"fake_garbage", MeasureStatus::runtime_error, "malformed"},
      {"fake_poison", MeasureStatus::runtime_error, "sticky"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.behaviour) {
      WorkerSupervisor s(fake_worker(0.5));
      s.set_task(small_task(), {});
      const MeasureReply before = s.measure(request(1, "fake_ok"));
      const MeasureReply bad = s.measure(request(2, c.behaviour));
      CHECK(bad.id == 2);
      CHECK(bad.result.status == c.status);
      CHECK_THAT(bad.result.error, Catch::Contains(c.error_part));
      CHECK(bad.context_poisoned);
      CHECK(s.restarts() == 1);
      CHECK(s.pid() == -1);
      const MeasureReply after = s.measure(request(3, "fake_ok"));
      REQUIRE(after.result.ok());
      CHECK(after.result.details.worker.pid != before.result.details.worker.pid);
      CHECK(after.result.details.worker.setups == 1);  // the new worker got the task
    }
  }
}

TEST_CASE("a run of mixed faults loses no record", "[worker]") {
  WorkerSupervisor s(fake_worker(0.3));
  s.set_task(small_task(), {});
  const std::vector<std::string> plan = {"fake_ok",      "fake_crash",  "fake_ok",   "fake_sleep",
                                         "fake_wrong",   "fake_poison", "fake_exit", "fake_ok",
                                         "fake_garbage", "fake_slow",   "fake_ok"};
  std::vector<MeasureReply> replies;
  for (size_t i = 0; i < plan.size(); ++i) replies.push_back(s.measure(request(i, plan[i])));
  REQUIRE(replies.size() == plan.size());
  std::set<uint64_t> ids;
  for (const MeasureReply& r : replies) ids.insert(r.id);
  CHECK(ids.size() == plan.size());
  CHECK(replies[1].result.status == MeasureStatus::runtime_error);
  CHECK(replies[3].result.status == MeasureStatus::timeout);
  CHECK(replies[4].result.status == MeasureStatus::wrong_answer);
  CHECK(replies[9].result.status == MeasureStatus::timeout);  // 0.3 s sleep > 0.3 s watchdog
  CHECK(replies[10].result.ok());
  CHECK(s.restarts() == 6);
}

TEST_CASE("a slow answer inside the watchdog is fine", "[worker]") {
  WorkerSupervisor s(fake_worker(2.0));
  s.set_task(small_task(), {});
  CHECK(s.measure(request(1, "fake_slow")).result.ok());
  CHECK(s.restarts() == 0);
}

TEST_CASE("a worker that cannot take the task is a WorkerError", "[worker]") {
  WorkerTask t = small_task();
  t.arguments.push_back(argument("fail_setup", "float32", 1, false));
  WorkerSupervisor s(fake_worker());
  CHECK_THROWS_WITH(s.set_task(t, {}), Catch::Contains("fake setup failure"));

  WorkerOptions missing = fake_worker();
  missing.command = {"/nonexistent/cutune-worker"};
  WorkerSupervisor m(missing);
  CHECK_THROWS_AS(m.set_task(small_task(), {}), WorkerError);
  CHECK(m.pid() == -1);
}

TEST_CASE("16-bit and split-K tensors reach the worker sized and started by their dtype",
          "[worker]") {
  struct Case {
    std::string op, name;
    int64_t c_bytes, ab_bytes;  // per element
    bool c_zero_init;
  };
  const int64_t m = 48, n = 40, k = 24;
  for (const Case& c : {Case{"gemm_fp16", "gemm_fp16_nn", 4, 2, true},
                        Case{"gemm_bf16", "gemm_bf16_nt", 4, 2, true},
                        Case{"gemm_fp16", "gemm_fp16_nn_out16", 2, 2, false},
                        Case{"gemm_bf16", "gemm_bf16_nn_out16", 2, 2, false},
                        Case{"gemm", "gemm_nn", 4, 4, false}}) {
    INFO(c.name);
    auto tmpl = make_template(c.op, {m, n, k}, c.name);
    GpuMeasureOptions o;
    std::vector<char> expected;
    const WorkerTask task = worker_task(*tmpl, o, &expected);
    // A 16-bit GEMM is checked against cuBLAS GemmEx on the GPU, as SGEMM checks fp32.
    CHECK(task.reference == ReferenceKind::baseline);
    WorkerSupervisor s(fake_worker());
    s.set_task(task, expected);
    const MeasureReply reply = s.measure(request(1, "fake_ok"));
    REQUIRE(reply.result.ok());
    const nlohmann::json& args = reply.result.details.worker.task.value().at("arguments");
    REQUIRE(args.size() == 3);
    CHECK(args[0]["bytes"] == m * n * c.c_bytes);
    CHECK(args[1]["bytes"] == m * k * c.ab_bytes);
    CHECK(args[2]["bytes"] == k * n * c.ab_bytes);
    // C starts at zero and is reset before every run where split-K adds into it, else NaN.
    CHECK(args[0]["init"] == (c.c_zero_init ? "zero" : "nan"));
    CHECK(args[0]["reset_each_run"] == c.c_zero_init);
    CHECK(args[1]["init"] == "seeded");
    CHECK(args[2]["reset_each_run"] == false);
    // Each output's tolerance is the rule's for its dtype and the reduction length.
    CHECK(args[0]["tolerance"].get<double>() ==
          error_tolerance(c.c_bytes == 4 ? "float32" : tmpl->tensors()[0].type.dtype ==
                                                               ir::DType::Float16
                                                           ? "float16"
                                                           : "bfloat16",
                          k));
    CHECK(args[1]["tolerance"] == 0.0);
    const BaselineSpec b =
        BaselineSpec::from_json(reply.result.details.worker.baseline_spec.value());
    REQUIRE(b.kind == BaselineSpec::Kind::gemm);
    CHECK(b.gemm.input == tmpl->tensors()[1].type.dtype);
    CHECK(b.gemm.output == tmpl->tensors()[0].type.dtype);
  }
}

TEST_CASE("a 16-bit convolution carries the CPU reference on rounded inputs", "[worker]") {
  auto tmpl = make_template("conv2d_fp16", {1, 8, 7, 7, 8, 3, 3, 1, 1}, "conv2d_fp16_nhwc_out16");
  GpuMeasureOptions o;
  o.seed = 5;
  std::vector<char> expected;
  const WorkerTask task = worker_task(*tmpl, o, &expected);
  CHECK(task.reference == ReferenceKind::host);
  REQUIRE(task.baseline.kind == BaselineSpec::Kind::conv);
  CHECK(task.arguments[0].elem == "float16");
  // The expected outputs travel as float32 whatever the output's dtype.
  REQUIRE(expected.size() == size_t(task.arguments[0].elements) * sizeof(float));
  CHECK(task.blob_bytes() == int64_t(expected.size()));
  // They are the reference on the inputs rounded to fp16, exactly as the worker fills them.
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < task.arguments.size(); ++i)
    values.push_back(task.arguments[i].is_output
                         ? std::vector<float>(size_t(task.arguments[i].elements), 0.0f)
                         : input_values(o.seed, int(i), task.arguments[i].elements, "float16"));
  tmpl->reference(values);
  CHECK(std::memcmp(expected.data(), values[0].data(), expected.size()) == 0);
  WorkerSupervisor s(fake_worker());
  s.set_task(task, expected);
  const MeasureReply reply = s.measure(request(1, "fake_ok"));
  const nlohmann::json& echo = reply.result.details.worker.task.value();
  CHECK(echo["arguments"][0]["bytes"] == task.arguments[0].elements * 2);
  CHECK(echo["expected_bytes"] == expected.size());
}

TEST_CASE("a user kernel's task: argument sizes, scalar bytes and constant uploads arrive right",
          "[worker]") {
  // Arguments: an int32 output of 6, a float input of 5, an int32 scalar 77 by value, and 3
  // floats for the __constant__ symbol "coeffs"; then the reference cubin (here 4 bytes).
  WorkerTask t;
  t.seed = 2;
  const auto blob_argument = [](const std::string& name, ArgKind kind, const std::string& elem,
                                int64_t elements, bool is_output) {
    WorkerArgument a = argument(name, elem, elements, is_output);
    a.kind = kind;
    a.init = ArgInit::blob;
    return a;
  };
  t.arguments = {blob_argument("out", ArgKind::buffer, "int32", 6, true),
                 blob_argument("in", ArgKind::buffer, "float32", 5, false),
                 blob_argument("n", ArgKind::scalar, "int32", 1, false),
                 blob_argument("coeffs", ArgKind::constant, "float32", 3, false)};
  t.reference = ReferenceKind::kernel;
  t.reference_kernel = "ref";
  t.reference_launch.grid = {2, 1, 1};
  t.reference_args = {0, 1, 2};
  t.reference_cubin_bytes = 4;
  std::vector<char> blob(24 + 20, 0);
  const int32_t n = 77;
  const float coeffs[3] = {0.5f, 1.5f, -2.0f};
  blob.insert(blob.end(), reinterpret_cast<const char*>(&n), reinterpret_cast<const char*>(&n) + 4);
  blob.insert(blob.end(), reinterpret_cast<const char*>(coeffs),
              reinterpret_cast<const char*>(coeffs) + 12);
  blob.insert(blob.end(), {'c', 'u', 'b', 'n'});
  CHECK(t.blob_bytes() == int64_t(blob.size()));

  const WorkerTask back = task_from_frame(task_frame(t, blob));
  CHECK(back.arguments[2].kind == ArgKind::scalar);
  CHECK(back.arguments[3].name == "coeffs");
  CHECK(back.arguments[3].init == ArgInit::blob);
  CHECK(back.reference == ReferenceKind::kernel);
  CHECK(back.reference_args == std::vector<int>{0, 1, 2});
  CHECK(back.reference_launch.grid == Dim3{2, 1, 1});
  CHECK_THROWS_WITH(task_from_frame(task_frame(t, std::vector<char>(blob.begin(), blob.end() - 1))),
                    Catch::Contains("blob has"));

  WorkerSupervisor s(fake_worker());
  s.set_task(t, blob);
  const MeasureReply reply = s.measure(request(1, "fake_ok"));
  const nlohmann::json& got = reply.result.details.worker.task.value();
  CHECK(got["blob_bytes"] == blob.size());
  CHECK(got["reference_cubin_bytes"] == 4);
  CHECK(got["arguments"][0]["bytes"] == 24);
  CHECK(got["arguments"][1]["bytes"] == 20);
  CHECK(got["arguments"][2]["first_bytes"] == "4d000000");          // 77, little-endian
  CHECK(got["arguments"][3]["first_bytes"] == "0000003f0000c03f");  // 0.5f, 1.5f
  CHECK(got["arguments"][3]["kind"] == "constant");
}
