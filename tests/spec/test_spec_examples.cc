// The example kernels under examples/: their specs load, sampled configurations run in the
// emulator and match the reference, and valid configurations compile with NVRTC for sm_90.

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "src/measure/correctness.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_verify.h"

using namespace cutune;
using namespace cutune::spec;

namespace {

const std::string kExamples = CUTUNE_SOURCE_DIR "/examples";

SpecTask load_example(const std::string& file, std::vector<int64_t> problem_size) {
  KernelSpec spec = load_kernel_spec(kExamples + "/" + file);
  spec.problem_size = std::move(problem_size);
  return SpecTask(std::move(spec));
}

// Samples `count` valid configurations (always including the reference) and checks each.
void verify_sample(const SpecTask& task, int count, uint64_t seed) {
  emu::EmulatorOptions options;
  options.host_threads = 2;
  emu::Emulator emulator(options);
  SpecVerifier verifier(task, emulator, target_limits("sm_90"));
  REQUIRE(verifier.reference().has_value());
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    std::optional<Config> c = task.space().sample_valid(rng);
    REQUIRE(c);
    SpecCheck r = verifier.check(*c);
    INFO(c->to_string() << ": " << r.status << " " << r.message);
    CHECK(r.passed);
  }
}

// Runs `params` of `task` once in the emulator on the arguments filled as the spec says and
// returns every argument (inputs as filled, outputs as the kernel left them).
std::vector<ArgData> emulate(const SpecTask& task, const std::vector<int64_t>& params) {
  const KernelSpec& spec = task.spec();
  const SpecInstance in = task.instantiate(params);
  std::vector<ArgData> args;
  std::vector<emu::HostBuffer> buffers;
  std::vector<emu::ScalarArg> scalars;
  for (size_t i = 0; i < spec.arguments.size(); ++i) {
    const ArgData& a = args.emplace_back(
        make_argument(spec.arguments[i], int(i), in.elements[i], in.fill_values[i], 1));
    if (spec.arguments[i].is_scalar) {
      emu::ScalarArg& s = scalars.emplace_back();
      s.type = storage_type(a.type);
      std::memcpy(s.bits.data(), a.bytes.data(), a.bytes.size());
    } else {
      buffers.push_back({storage_type(a.type), a.bytes});
    }
  }
  emu::EmulatorOptions options;
  options.host_threads = 2;
  emu::Emulator emulator(options);
  const emu::EmuResult r = emulator.run(task.emulator_source(in), buffers, scalars);
  INFO(r.message);
  REQUIRE(r.status == emu::EmuStatus::ok);
  size_t next = 0;
  for (size_t i = 0; i < spec.arguments.size(); ++i)
    if (!spec.arguments[i].is_scalar) args[i].bytes = std::move(buffers[next++].bytes);
  return args;
}

}  // namespace

// The tests above compare configurations with the reference configuration only; these compare
// the reference configuration with the operator itself, computed on the host from the same
// inputs, so that a bug every configuration shares is caught too.
TEST_CASE("conv2d example: the reference configuration computes the convolution") {
  const int width = 37, height = 21, filter = 7;  // odd sizes: partial blocks at both edges
  const SpecTask task = load_example("conv2d/conv2d.json", {width, height});
  const std::vector<ArgData> args = emulate(task, task.spec().reference.configuration);
  const std::vector<float> output = args[0].to_floats(), input = args[1].to_floats(),
                           weights = args[2].to_floats();
  const int in_width = width + filter - 1;
  REQUIRE(output.size() == size_t(width * height));
  REQUIRE(input.size() == size_t(in_width * (height + filter - 1)));
  REQUIRE(weights.size() == size_t(filter * filter));
  std::vector<float> expected(output.size());
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double sum = 0;
      for (int i = 0; i < filter; ++i)
        for (int j = 0; j < filter; ++j)
          sum += double(input[(y + i) * in_width + x + j]) * weights[i * filter + j];
      expected[y * width + x] = float(sum);
    }
  }
  const CompareResult c = compare_outputs(output.data(), expected.data(), int64_t(output.size()));
  const double tolerance = error_tolerance("float32", filter * filter);
  INFO(c.describe(tolerance));
  CHECK(c.ok(tolerance));
}

TEST_CASE("reduction example: the reference configuration computes the sum") {
  const int n = 1003;  // small enough that one element more or less is beyond the tolerance
  const SpecTask task = load_example("reduction/reduce.json", {n});
  const std::vector<ArgData> args = emulate(task, task.spec().reference.configuration);
  const std::vector<float> out = args[0].to_floats(), in = args[1].to_floats();
  REQUIRE(out.size() == 1);
  REQUIRE(in.size() == size_t(n));
  double sum = 0;
  for (float v : in) sum += v;
  const float expected = float(sum);
  const CompareResult c = compare_outputs(out.data(), &expected, 1);
  const double tolerance = error_tolerance("float32", n);
  INFO(c.describe(tolerance));
  CHECK(c.ok(tolerance));
}

TEST_CASE("conv2d example: sampled configurations match the reference in the emulator") {
  verify_sample(load_example("conv2d/conv2d.json", {67, 45}), 20, 1);
}

TEST_CASE("reduction example: sampled configurations match the reference in the emulator") {
  verify_sample(load_example("reduction/reduce.json", {10003}), 20, 2);
}

TEST_CASE("the search starts from each example's reference configuration") {
  for (const auto& [file, size] :
       {std::pair<std::string, std::vector<int64_t>>{"conv2d/conv2d.json", {64, 48}},
        std::pair<std::string, std::vector<int64_t>>{"reduction/reduce.json", {4096}}}) {
    INFO(file);
    const SpecTask task = load_example(file, size);
    const std::vector<Config> seeds = task.seed_configs();
    REQUIRE(seeds.size() == 1);
    CHECK(task.params_of(seeds[0]) == task.spec().reference.configuration);
    CHECK(task.space().is_valid(seeds[0]));
  }
}

TEST_CASE("a planted indexing bug is a mismatch, an unknown intrinsic is 'not emulated'") {
  SpecTask good = load_example("reduction/reduce.json", {4099});
  const std::string src = good.source();
  auto with_source = [&](const std::string& from, const std::string& to) {
    const auto dir = std::filesystem::temp_directory_path() / "cutune_test_spec_planted";
    std::filesystem::create_directories(dir);
    std::string edited = src;
    const size_t at = edited.find(from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, from.size(), to);
    std::ofstream(dir / "reduce.cu") << edited;
    std::filesystem::copy_file(kExamples + "/reduction/reduce.json", dir / "reduce.json",
                               std::filesystem::copy_options::overwrite_existing);
    KernelSpec spec = load_kernel_spec(dir / "reduce.json");
    spec.problem_size = {4099};
    spec.reference.configuration = good.spec().reference.configuration;
    return std::make_unique<SpecTask>(std::move(spec));
  };
  emu::EmulatorOptions options;
  options.host_threads = 2;
  emu::Emulator emulator(options);
  // Drops the tail loop's elements: only configurations whose vectors leave a tail differ, and
  // the default (vector_width 1) reference has none, so compare a vector_width 4 candidate.
  auto bad = with_source("i < n; i += stride) sum += in[i];", "i < n; i += stride) sum += 0.0f;");
  SpecVerifier verifier(*bad, emulator, target_limits("sm_90"));
  SpecCheck r = verifier.check(bad->config_of({128, 64, 4, 1}));
  CHECK(r.status == "mismatch");
  CHECK_FALSE(r.passed);
  auto unknown = with_source("if (tid == 0) atomicAdd(out, sum);",
                             "if (tid == 0) atomicAdd(out, __fsqrt_rz(sum * sum));");
  SpecVerifier verifier2(*unknown, emulator, target_limits("sm_90"));
  SpecCheck n = verifier2.check(unknown->config_of({128, 64, 1, 1}));
  INFO(n.message);
  CHECK(n.status == "reference_failed");
  CHECK_THAT(n.message, Catch::Matchers::Contains("not emulated: '__fsqrt_rz'"));
}

TEST_CASE("sampled configurations of both examples compile with NVRTC for sm_90") {
  for (const char* file : {"conv2d/conv2d.json", "reduction/reduce.json"}) {
    SpecTask task(load_kernel_spec(kExamples + "/" + file));
    BuildOptions build;
    build.arch = "sm_90";
    build.extra_flags = task.spec().compiler_options;
    NvrtcBuilder builder(build, 2);
    std::mt19937_64 rng(7);
    std::vector<CudaSource> sources;
    for (int i = 0; i < 4; ++i)
      sources.push_back(task.nvrtc_source(task.instantiate(*task.space().sample_valid(rng))));
    for (const CompileResult& r : builder.compile_batch(sources)) {
      INFO(file << ": " << r.log);
      CHECK(r.ok());
    }
  }
}
