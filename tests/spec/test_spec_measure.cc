// A user kernel's way to the GPU worker, without a GPU: the worker task a spec makes (argument
// bytes, scalars, constant memory, the reference's cubin) crosses the real socket to the fake
// worker intact; each configuration becomes the right request or an invalid / compile-error
// result; templated kernels compile through NVRTC name expressions.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "src/measure/gpu_measurer.h"
#include "src/measure/worker_process.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_export.h"
#include "src/spec/spec_kernel_task.h"

using namespace cutune;
using namespace cutune::spec;

namespace {

const std::string kExamples = CUTUNE_SOURCE_DIR "/examples";

SpecTask load_example(const std::string& file, std::vector<int64_t> problem_size) {
  KernelSpec spec = load_kernel_spec(kExamples + "/" + file);
  spec.problem_size = std::move(problem_size);
  return SpecTask(std::move(spec));
}

std::string hex(const void* data, size_t bytes) {
  std::string out;
  for (size_t i = 0; i < bytes; ++i)
    out += fmt::format("{:02x}", static_cast<const unsigned char*>(data)[i]);
  return out;
}

WorkerOptions fake_worker() {
  const char* moved = std::getenv("CUTUNE_TEST_WORKER");
  WorkerOptions o;
  o.command = {moved ? moved : CUTUNE_TEST_WORKER, "--fake"};
  o.measure_timeout_s = 5;
  o.setup_timeout_s = 10;
  return o;
}

}  // namespace

TEST_CASE("a spec's worker task carries buffers, scalars by value and constant memory") {
  const SpecTask task = load_example("conv2d/conv2d.json", {64, 48});
  const DeviceInfo device = target_limits("sm_90");
  NvrtcBuilder builder(BuildOptions{"sm_90", task.spec().compiler_options});
  GpuMeasureOptions options;
  options.seed = 3;
  const SpecWorkerTask t = spec_worker_task(task, options, builder, device);
  const WorkerTask& u = t.task;
  REQUIRE(u.arguments.size() == 5);
  for (const WorkerArgument& a : u.arguments) CHECK(a.init == ArgInit::blob);
  CHECK(u.arguments[0].kind == ArgKind::buffer);
  CHECK(u.arguments[0].is_output);
  CHECK_FALSE(u.arguments[0].reset_each_run);
  CHECK(u.arguments[0].tolerance > 0);
  CHECK(u.arguments[0].bytes() == 64 * 48 * 4);
  CHECK(u.arguments[1].bytes() == (64 + 6) * (48 + 6) * 4);
  CHECK(u.arguments[2].kind == ArgKind::constant);
  CHECK(u.arguments[2].name == "d_filter");
  CHECK(u.arguments[2].bytes() == 49 * 4);
  CHECK(u.arguments[3].kind == ArgKind::scalar);
  CHECK(u.arguments[3].elem == "int32");
  CHECK(u.arguments[4].bytes() == 4);
  // The reference is the default configuration, compiled here and run by the worker.
  CHECK(u.reference == ReferenceKind::kernel);
  CHECK(u.expected_bytes() == 0);
  CHECK(u.reference_kernel == "conv2d");
  CHECK(u.reference_args == std::vector<int>{0, 1, 2, 3, 4});  // d_filter too (Kernel Tuner passes it)
  CHECK(u.reference_launch.block == Dim3{16, 16, 1});
  CHECK(u.reference_launch.grid == Dim3{4, 3, 1});
  CHECK(u.reference_cubin_bytes > 1000);
  CHECK(int64_t(t.blob.size()) == u.blob_argument_bytes() + u.reference_cubin_bytes);

  // Through the real frames to the fake worker, which reports what it received.
  WorkerSupervisor worker(fake_worker());
  worker.set_task(t.task, t.blob);
  MeasureRequest r;
  r.kernel_name = "fake_ok";
  const MeasureReply reply = worker.measure(r);
  REQUIRE(reply.result.status == MeasureStatus::ok);
  REQUIRE(reply.result.details.worker.task);
  const nlohmann::json& got = *reply.result.details.worker.task;
  CHECK(got["blob_bytes"] == t.blob.size());
  CHECK(got["reference_cubin_bytes"] == u.reference_cubin_bytes);
  CHECK(got["reference_args"] == u.reference_args);
  const nlohmann::json& args = got["arguments"];
  REQUIRE(args.size() == 5);
  const int32_t width = 64, height = 48;
  CHECK(args[3]["kind"] == "scalar");
  CHECK(args[3]["first_bytes"] == hex(&width, 4));
  CHECK(args[4]["first_bytes"] == hex(&height, 4));
  CHECK(args[2]["kind"] == "constant");
  CHECK(args[2]["name"] == "d_filter");
  const ArgData filter = make_argument(task.spec().arguments[2], 2, 49, 1.0, options.seed);
  CHECK(args[2]["first_bytes"] == hex(filter.bytes.data(), 8));
  CHECK(args[0]["first_bytes"] == "0000000000000000");  // the output's constant fill, 0.0
  for (size_t i = 0; i < 5; ++i) CHECK(args[i]["bytes"] == u.arguments[i].bytes());

  // A blob that does not match the arguments is a malformed task.
  Frame f = task_frame(t.task, std::vector<char>(t.blob.begin(), t.blob.end() - 1));
  CHECK_THROWS_WITH(task_from_frame(f), Catch::Contains("blob has"));
  const WorkerTask back = task_from_frame(task_frame(t.task, t.blob));
  CHECK(back.arguments[2].name == "d_filter");
  CHECK(back.reference_launch.grid == Dim3{4, 3, 1});
}

TEST_CASE("an expected-output file travels in the blob, no reference kernel runs") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutune_spec_out";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kExamples + "/reduction/reduce.cu", dir / "reduce.cu",
                             std::filesystem::copy_options::overwrite_existing);
  nlohmann::json j;
  std::ifstream(kExamples + "/reduction/reduce.json") >> j;
  j["KernelSpecification"]["ProblemSize"] = {1000};
  j["KernelSpecification"]["Reference"] = {{"OutputFile", "expected.bin"}};
  const float expected = 123.5f;
  std::ofstream(dir / "expected.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(&expected), sizeof expected);
  std::ofstream(dir / "spec.json") << j.dump();
  const SpecTask task(load_kernel_spec(dir / "spec.json"));
  NvrtcBuilder builder(BuildOptions{"sm_90", task.spec().compiler_options});
  const SpecWorkerTask t = spec_worker_task(task, {}, builder, target_limits("sm_90"));
  const WorkerTask& u = t.task;
  CHECK(u.reference == ReferenceKind::file);
  CHECK(u.reference_cubin_bytes == 0);
  CHECK(u.expected_bytes() == 4);
  CHECK(u.blob_bytes() == int64_t(t.blob.size()));
  float tail = 0;
  std::memcpy(&tail, t.blob.data() + t.blob.size() - 4, 4);
  CHECK(tail == expected);
  std::filesystem::remove_all(dir);
}

TEST_CASE("each configuration becomes a request, or a result saying why it cannot run") {
  const SpecTask task = load_example("reduction/reduce.json", {4096});
  const DeviceInfo device = target_limits("sm_90");
  NvrtcBuilder builder(BuildOptions{"sm_90", task.spec().compiler_options});
  const SpecWorkerTask t = spec_worker_task(task, {}, builder, device);
  const SpecInstance in = task.instantiate(std::vector<int64_t>{128, 64, 2, 1});
  const CompileResult compiled = builder.compile(task.nvrtc_source(in));
  REQUIRE(compiled.ok());
  const InstanceOrWhy k = spec_kernel_instance(task, t.reference, in, device);
  REQUIRE(k.instance);
  CHECK(k.instance->args == std::vector<int>{0, 1, 2});
  const Candidate c = compiled_candidate(*k.instance, compiled, device, true);
  REQUIRE(c.runnable);
  CHECK(c.request.kernel_name == "reduce_sum");
  CHECK(c.request.args == std::vector<int>{0, 1, 2});
  CHECK(c.request.launch.block == Dim3{128, 1, 1});
  CHECK(c.request.launch.grid == Dim3{16, 1, 1});  // min(64, 4096 / (128 * 2))
  CHECK(c.request.launch.dynamic_smem_bytes == 128 * 4);
  CHECK(c.request.cubin == compiled.cubin);

  CompileResult broken;
  broken.log = "reduce.cu(3): error: identifier \"oops\" is undefined\nmore";
  const Candidate e = compiled_candidate(*k.instance, broken, device, true);
  CHECK_FALSE(e.runnable);
  CHECK(e.result.status == MeasureStatus::compile_error);
  CHECK(e.result.error == "reduce.cu(3): error: identifier \"oops\" is undefined");

  SpecInstance other = in;
  other.elements[1] = 8192;  // sizes that follow a parameter cannot share the task's buffers
  const InstanceOrWhy s = spec_kernel_instance(task, t.reference, other, device);
  CHECK_FALSE(s.instance);
  CHECK_THAT(s.why, Catch::Contains("allocated once"));

  const TaskKey key = spec_task_key(task, "sm_90", "NVIDIA H200");
  CHECK(key.op == "spec");
  CHECK(key.template_name == "reduce_sum");
  CHECK(key.shape == std::vector<int64_t>{4096});
}

TEST_CASE("a spec's configurations go through the templates' GPU measurer") {
  // The one measurer over a user kernel's task, without a GPU: conditions and launch limits
  // answer before NVRTC, NVRTC compiles the rest, and the (fake) worker gets the spec's
  // arguments and a request for each compiled candidate.
  const SpecTask task = load_example("reduction/reduce.json", {4096});
  GpuMeasureOptions o;
  o.worker_command = fake_worker().command;
  std::unique_ptr<Measurer> m =
      make_gpu_measurer(spec_kernel_task(task), o, target_limits("sm_90"));
  const std::vector<Config> batch = {
      task.config_of({128, 64, 2, 1}),
      task.config_of({1024, 2048, 1, 0}),  // 1024 * 2048 threads break the spec's condition
      task.config_of({256, 256, 1, 0})};
  std::vector<size_t> arrived;
  const std::vector<MeasureResult> r =
      m->measure_streaming(batch, [&](size_t i, const MeasureResult&) { arrived.push_back(i); });
  REQUIRE(r.size() == 3);
  CHECK(arrived.size() == 3);
  CHECK(r[1].status == MeasureStatus::invalid);
  CHECK_THAT(r[1].error, Catch::StartsWith("condition"));
  for (size_t i : {size_t(0), size_t(2)}) {
    INFO(r[i].error);
    // The fake worker knows no "reduce_sum": it answers with its message, after the candidate
    // was compiled (ptxas extras) and sent with the spec's three arguments.
    CHECK_THAT(r[i].error, Catch::Contains("fake backend"));
    CHECK(r[i].compile_s > 0);
    CHECK(r[i].details.compile.registers);
    CHECK(r[i].details.compile.cubin_bytes.value_or(0) > 0);
    REQUIRE(r[i].details.worker.task);
    CHECK(r[i].details.worker.task->at("arguments").size() == 3);
  }
  CHECK(m->target_arch() == "sm_90");
}

TEST_CASE("a template kernel compiles through an NVRTC name expression") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutune_spec_tmpl";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "scale.cu") << R"(
template <typename T, int block>
__global__ void scale(T* out, const T* in, int n) {
  int i = blockIdx.x * block + threadIdx.x;
  if (i < n) out[i] = in[i] * T(2);
}
)";
  std::ofstream(dir / "spec.json") << R"({
 "General": {"BenchmarkName": "scale", "FormatVersion": 1},
 "ConfigurationSpace": {"TuningParameters": [
   {"Name": "block_size_x", "Type": "int", "Values": "[64, 128]", "Default": 64}],
   "Conditions": []},
 "KernelSpecification": {"Language": "CUDA", "KernelName": "scale", "KernelFile": "scale.cu",
   "TemplateArguments": "float, block_size_x", "GlobalSizeType": "CUDA",
   "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
   "GlobalSize": {"X": "(ProblemSize[0] + block_size_x - 1) // block_size_x", "Y": "1", "Z": "1"},
   "ProblemSize": [1000],
   "Arguments": [
     {"Name": "out", "Type": "float", "MemoryType": "Vector", "FillType": "Constant",
      "FillValue": 0.0, "Size": "ProblemSize[0]", "Output": 1},
     {"Name": "in", "Type": "float", "MemoryType": "Vector", "FillType": "Random",
      "FillValue": 1.0, "Size": "ProblemSize[0]"},
     {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": "ProblemSize[0]"}]}})";
  const SpecTask task(load_kernel_spec(dir / "spec.json"));
  const SpecInstance in = task.instantiate(std::vector<int64_t>{128});
  const CudaSource src = task.nvrtc_source(in);
  CHECK(src.kernel_name == "scale<float, 128>");
  NvrtcBuilder builder(BuildOptions{"sm_90", {}});
  const CompileResult c = builder.compile(src);
  INFO(c.log);
  REQUIRE(c.ok());
  CHECK(c.kernel_name.rfind("_Z", 0) == 0);  // the mangled symbol of scale<float, 128>
  CHECK(c.kernel_name.find("scale") != std::string::npos);
  CHECK(c.ptxas.parsed);
  const SpecWorkerTask t = spec_worker_task(task, {}, builder, target_limits("sm_90"));
  CHECK(t.task.reference_kernel.rfind("_Z", 0) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("export --spec writes the best configuration's cubin, source and launch manifest") {
  const SpecTask task = load_example("reduction/reduce.json", {4096});
  auto record = [&](std::vector<int64_t> params, double seconds, bool ok) {
    Record r;
    r.task = spec_task_key(task, "sm_90", "a GPU");
    const Config c = task.config_of(params);
    r.config_index = c.index();
    r.knobs = c.to_json()["knobs"];
    r.result.status = ok ? MeasureStatus::ok : MeasureStatus::wrong_answer;
    r.result.times_s = {seconds};
    return r;
  };
  std::vector<Record> records = {record({256, 256, 1, 0}, 3e-5, true),
                                 record({128, 64, 4, 1}, 1e-5, true),
                                 record({64, 128, 2, 1}, 5e-6, false)};
  Record foreign = records[0];
  foreign.knobs = {{"block_size_x", 32}};  // not this spec's parameters: skipped
  foreign.result.times_s = {1e-9};
  records.push_back(foreign);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutune_spec_export";
  std::filesystem::remove_all(dir);
  const SpecExport e = export_spec_best(task, records, dir);
  const nlohmann::json& m = e.entry;
  CHECK(m["config"]["index"] == records[1].config_index);
  CHECK(m["config"]["knobs"]["block_size_x"] == 128);
  CHECK(m["config"]["knobs"]["vector_width"] == 4);
  CHECK(m["block"] == nlohmann::json({128, 1, 1}));
  CHECK(m["grid"] == nlohmann::json({8, 1, 1}));  // min(64, 4096 / (128 * 4))
  CHECK(m["shared_bytes"]["dynamic"] == 128 * 4);
  CHECK(m["kernel"] == "reduce_sum");
  CHECK(m["task"]["arch"] == "sm_90");
  CHECK(m["task"]["op"] == "spec");
  CHECK(m["time_s"].get<double>() == Approx(1e-5));
  // The kernel's parameters as the templates' manifest lists them: two buffers, a scalar.
  REQUIRE(m["params"].size() == 3);
  CHECK(m["params"][0]["pointer"] == true);
  CHECK(m["params"][2]["name"] == "n");
  CHECK(m["params"][2]["pointer"] == false);
  CHECK_FALSE(m.contains("constants"));
  // The manifest file is the templates' format, with this one kernel.
  nlohmann::json file;
  std::ifstream(dir / "manifest.json") >> file;
  CHECK(file["version"] == 1);
  REQUIRE(file["kernels"].size() == 1);
  CHECK(file["kernels"][0] == m);
  std::ifstream cubin(e.cubin, std::ios::binary);
  char magic[4] = {};
  cubin.read(magic, 4);
  CHECK(std::string(magic, 4) ==
        "\x7f"
        "ELF");
  // The source as compiled: Kernel Tuner's defines (the grid first), then the user's file.
  std::ifstream source(e.source);
  std::string first, block;
  std::getline(source, first);
  for (int i = 0; i < 3; ++i) std::getline(source, block);
  CHECK_THAT(first, Catch::StartsWith("#define grid_size_x "));
  CHECK(block == "#define block_size_x 128");
  CHECK(std::filesystem::exists(dir / "manifest.json"));
  CHECK_THROWS_WITH(export_spec_best(task, {foreign}, dir), Catch::Contains("no ok record"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("export --spec lists a kernel's __constant__ arguments to fill before a launch") {
  const SpecTask task = load_example("conv2d/conv2d.json", {64, 48});
  Record r;
  r.task = spec_task_key(task, "sm_90", "a GPU");
  const Config c = task.seed_configs().at(0);
  r.config_index = c.index();
  r.knobs = c.to_json()["knobs"];
  r.result.status = MeasureStatus::ok;
  r.result.times_s = {2e-5};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutune_spec_export2";
  std::filesystem::remove_all(dir);
  const SpecExport e = export_spec_best(task, {r}, dir);
  REQUIRE(e.entry.contains("constants"));
  CHECK(e.entry["constants"] ==
        nlohmann::json::array({{{"name", "d_filter"}, {"type", "float32"}, {"elements", 49}}}));
  // Kernel Tuner passes it as a parameter too: output, input, d_filter, width and height.
  REQUIRE(e.entry["params"].size() == 5);
  CHECK(e.entry["params"][2]["name"] == "d_filter");
  std::filesystem::remove_all(dir);
}
