// A T1 spec means what Kernel Tuner's tune_kernel_T1 makes of it: the launch from the
// block-size parameters, ProblemSize and GridDiv (cutune's GlobalSize rule only when asked
// for), Kernel Tuner's defines in front of the source, constant-memory arguments passed *and*
// uploaded, CUDA vector types; and a kernel written for Kernel Tuner (tests/spec/data/kt_style:
// C++ linkage, a `kernel_tuner` guard, a header beside it, a define in its CompilerOptions, a
// two-factor GridDivX) compiles with NVRTC and verifies in the emulator unchanged, while a
// variant with a planted wrong result fails.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "src/runtime/nvrtc_builder.h"
#include "src/spec/spec_buffers.h"
#include "src/spec/spec_task.h"
#include "src/spec/spec_verify.h"
#include "tests/cli/cli_run.h"

using namespace cutune;
using namespace cutune::spec;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string kKtStyle = CUTUNE_SOURCE_DIR "/tests/spec/data/kt_style";

// A spec of a kernel file that need not exist (the launch and the sources are made without it).
nlohmann::json spec_json(nlohmann::json parameters) {
  return {{"ConfigurationSpace", {{"TuningParameters", std::move(parameters)}, {"Conditions", nlohmann::json::array()}}},
          {"KernelSpecification",
           {{"Language", "CUDA"},
            {"KernelName", "k"},
            {"KernelFile", "k.cu"},
            {"LocalSize", {{"X", "block_size_x"}, {"Y", "1"}, {"Z", "1"}}},
            {"GlobalSize", {{"X", "no_such_name"}, {"Y", "1"}, {"Z", "1"}}},
            {"ProblemSize", {1000, 7}},
            {"Arguments",
             {{{"Name", "out"}, {"Type", "float"}, {"MemoryType", "Vector"}, {"Size", "ProblemSize[0]"},
               {"Output", 1}},
              {{"Name", "table"}, {"Type", "float"}, {"MemoryType", "Vector"}, {"MemType", "Constant"},
               {"Size", 4}}}}}}};
}

nlohmann::json parameter(const std::string& name, const std::string& values) {
  return {{"Name", name}, {"Type", "int"}, {"Values", values}};
}

SpecTask task_of(const nlohmann::json& j) {
  return SpecTask(parse_kernel_spec(j, "/nonexistent/spec.json", false));
}

// What is wrong with the kernel part of `j` (empty: nothing).
std::string kernel_error(const nlohmann::json& j) {
  return parse_kernel_spec(j, "/nonexistent/spec.json", false).kernel_error;
}

const std::string kTwoArgs = "__global__ void k(float*, const float*) {}";

}  // namespace

TEST_CASE("Kernel Tuner's launch rule: the block from block_size_*, the grid from ProblemSize / GridDiv") {
  nlohmann::json j = spec_json({parameter("block_size_x", "[32, 64]"), parameter("tile_size_x", "[1, 3]")});
  j["KernelSpecification"]["GridDivX"] = {"block_size_x", "tile_size_x"};
  const SpecTask task = task_of(j);
  // GlobalSize is not read, so one that does not parse is a warning and nothing else.
  REQUIRE(task.spec().warnings.size() == 1);
  CHECK_THAT(task.spec().warnings[0], Contains("GlobalSize.X") && Contains("not used"));

  const SpecInstance in = task.instantiate(std::vector<int64_t>{64, 3});
  CHECK(in.launch.block == Dim3{64, 1, 1});  // no block_size_y: 1
  // x: ceil(1000 / (64 * 3)) = 6; y: no GridDivY and no block_size_y parameter: 7 / 1.
  CHECK(in.launch.grid == Dim3{6, 7, 1});
  // Kernel Tuner's defines, in its order, then the user's file from its line 1.
  CHECK(in.defines ==
        "#define grid_size_x 6\n#define grid_size_y 7\n#define grid_size_z 1\n"
        "#define block_size_x 64\n#define block_size_y 1\n#define block_size_z 1\n"
        "#define tile_size_x 3\n#define kernel_tuner 1\n");

  // Without block-size parameters: blocks of 256 threads, and ProblemSize is the grid.
  const SpecTask plain = task_of(spec_json({parameter("unroll", "[1, 2]")}));
  const SpecInstance p = plain.instantiate(std::vector<int64_t>{2});
  CHECK(p.launch.block == Dim3{256, 1, 1});
  CHECK(p.launch.grid == Dim3{1000, 7, 1});
}

TEST_CASE("a loop_unroll_factor parameter is a constexpr int, and 0 removes its #pragma unroll") {
  const SpecTask task =
      task_of(spec_json({parameter("block_size_x", "[32]"), parameter("loop_unroll_factor_k", "[0, 4]")}));
  const std::string kernel =
      "__global__ void k(float* o, const float* t) {\n  #pragma unroll loop_unroll_factor_k\n"
      "  for (int i = 0; i < 8; ++i) o[i] = t[i % 4];\n}\n";
  const SpecInstance four = task.instantiate(std::vector<int64_t>{32, 4});
  CHECK_THAT(four.defines, Contains("constexpr int loop_unroll_factor_k = 4;\n") &&
                               !Contains("#define loop_unroll_factor_k"));
  CHECK_THAT(task.nvrtc_source(four, {}, kernel).code, Contains("#pragma unroll loop_unroll_factor_k"));
  const SpecInstance zero = task.instantiate(std::vector<int64_t>{32, 0});
  CHECK_THAT(zero.defines, !Contains("loop_unroll_factor_k"));
  const std::string code = task.nvrtc_source(zero, {}, kernel).code;
  CHECK_THAT(code, !Contains("#pragma unroll") && Contains("for (int i = 0;"));
  // The pragma's line stays, empty, so the user's line numbers do not move.
  CHECK(std::count(code.begin(), code.end(), '\n') ==
        std::count(four.defines.begin(), four.defines.end(), '\n') - 1 + 1 +
            std::count(kernel.begin(), kernel.end(), '\n'));
}

TEST_CASE("cutune's GlobalSize launch rule is opt-in and named") {
  nlohmann::json j = spec_json({parameter("block_size_x", "[32, 64]")});
  j["KernelSpecification"]["CutuneLaunch"] = "GlobalSize";
  // Under cutune's rule GlobalSize is read, so it must parse.
  CHECK_THAT(kernel_error(j), Contains("GlobalSize.X") && Contains("no_such_name"));
  j["KernelSpecification"]["GlobalSize"]["X"] = "3";
  j["KernelSpecification"]["LocalSize"]["X"] = "block_size_x // 2";
  const SpecInstance in = task_of(j).instantiate(std::vector<int64_t>{64});
  CHECK(in.launch.block == Dim3{32, 1, 1});
  CHECK(in.launch.grid == Dim3{3, 1, 1});
  CHECK_THAT(in.defines, Contains("#define block_size_x 64\n"));  // the parameter's value

  j["KernelSpecification"]["CutuneLaunch"] = "Blocks";
  CHECK_THAT(kernel_error(j), Contains("CutuneLaunch") && Contains("GlobalSize"));
}

TEST_CASE("a LocalSize that is not the block Kernel Tuner launches is a warning") {
  nlohmann::json j = spec_json({parameter("threads", "[64, 128]")});
  j["KernelSpecification"]["LocalSize"]["X"] = "threads";
  j["KernelSpecification"]["GlobalSize"]["X"] = "1";
  const SpecTask task = task_of(j);
  REQUIRE(task.spec().warnings.size() == 1);
  CHECK_THAT(task.spec().warnings[0],
             Contains("LocalSize is (64,1,1)") && Contains("(256,1,1)") && Contains("CutuneLaunch"));
  CHECK(task.instantiate(std::vector<int64_t>{64}).launch.block == Dim3{256, 1, 1});
}

TEST_CASE("a constant-memory argument is a kernel parameter and fills its symbol") {
  const SpecTask task = task_of(spec_json({parameter("block_size_x", "[32]")}));
  const SpecInstance in = task.instantiate(std::vector<int64_t>{32});
  const CudaSource nvrtc = task.nvrtc_source(in, {}, kTwoArgs);
  REQUIRE(nvrtc.params.size() == 2);
  CHECK(nvrtc.params[1].name == "table");
  const CudaSource emu = task.emulator_source(in, {}, kTwoArgs);
  CHECK_THAT(emu.code, Contains("cutune_emu_fill_constant(&table") &&
                           Contains("k(cutune_arg0, cutune_arg1);"));
}

TEST_CASE("CUDA vector types: Size counts vectors, the kernel gets the vector type") {
  nlohmann::json j = spec_json({parameter("block_size_x", "[32]")});
  j["KernelSpecification"]["Arguments"][0]["Type"] = "float4";
  j["KernelSpecification"]["Arguments"][1]["Type"] = "int2";
  const SpecTask task = task_of(j);
  CHECK(arg_c_type(task.spec().arguments[0]) == "float4");
  CHECK(arg_c_type(task.spec().arguments[1]) == "int2");
  const SpecInstance in = task.instantiate(std::vector<int64_t>{32});
  CHECK(in.elements == std::vector<int64_t>{4000, 8});
  CHECK_THAT(task.emulator_source(in, {}, kTwoArgs).code, Contains("float4* cutune_arg0"));

  j["KernelSpecification"]["Arguments"][0]["Type"] = "half2";
  CHECK_THAT(kernel_error(j), Contains("unknown type 'half2'") && Contains("float4"));
  j["KernelSpecification"]["Arguments"][0] = {
      {"Name", "s"}, {"Type", "float2"}, {"MemoryType", "Scalar"}, {"FillValue", 1}};
  CHECK_THAT(kernel_error(j), Contains("Scalar of vector type"));
}

TEST_CASE("a Kernel Tuner-style kernel compiles with NVRTC for every valid configuration") {
  const SpecTask task(load_kernel_spec(kKtStyle + "/blur.json"));
  CHECK(task.spec().warnings.empty());
  NvrtcBuilder nvrtc(BuildOptions{.arch = "sm_90"}, 2);
  int compiled = 0;
  for (int64_t i = 0; i < task.space().size(); ++i) {
    const Config c = task.space().get(i);
    if (!task.space().is_valid(c)) continue;
    const CompileResult r = nvrtc.compile(task.nvrtc_source(task.instantiate(c)));
    INFO(c.to_string() << ": " << r.log);
    REQUIRE(r.ok());
    // C++ linkage: NVRTC's lowered (mangled) name is the symbol to load and to read ptxas by.
    CHECK_THAT(r.kernel_name, StartsWith("_Z") && Contains("blur_rows"));
    CHECK(r.ptxas.registers > 0);
    // The spec's -std replaces cutune's, so NVRTC's log has no warning in front.
    CHECK_THAT(r.log, !Contains("warning"));
    ++compiled;
  }
  CHECK(compiled == 15);
}

TEST_CASE("a Kernel Tuner-style kernel verifies in the emulator and a planted wrong result fails") {
  emu::EmulatorOptions options;
  options.host_threads = 2;
  emu::Emulator emulator(options);

  const SpecTask task(load_kernel_spec(kKtStyle + "/blur.json"));
  SpecVerifier verifier(task, emulator, target_limits("sm_90"));
  REQUIRE(verifier.reference().has_value());
  // The reference configuration against the blur itself, on the host from the same inputs
  // (SCALE from the CompilerOptions, RADIUS from the header, weights from constant memory).
  {
    const SpecInstance in = task.instantiate(task.spec().reference.configuration);
    const KernelSpec& s = task.spec();
    const std::vector<float> input =
        make_argument(s.arguments[1], 1, in.elements[1], in.fill_values[1], 1).to_floats();
    const std::vector<float> w =
        make_argument(s.arguments[2], 2, in.elements[2], in.fill_values[2], 1).to_floats();
    const std::vector<float> got = verifier.reference()->at(0).to_floats();
    const int width = 200, height = 6;
    REQUIRE(got.size() == size_t(width * height));
    double worst = 0;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        double sum = 0;
        for (int k = 0; k < 5; ++k) sum += double(input[size_t(y * (width + 4) + x + k)]) * w[size_t(k)];
        worst = std::max(worst, std::abs(2.0 * sum - got[size_t(y * width + x)]));
      }
    CHECK(worst < 1e-4);
  }

  const SpecTask planted(load_kernel_spec(kKtStyle + "/blur_planted.json"));
  SpecVerifier planted_verifier(planted, emulator, target_limits("sm_90"));
  int passed = 0, mismatched = 0;
  for (int64_t i = 0; i < task.space().size(); ++i) {
    const Config c = task.space().get(i);
    if (!task.space().is_valid(c)) continue;
    const SpecCheck good = verifier.check(c);
    INFO(c.to_string() << ": " << good.status << " " << good.message);
    CHECK(good.passed);
    passed += good.passed;
    const SpecCheck bad = planted_verifier.check(planted.space().get(i));
    const bool three = planted.params_of(planted.space().get(i))[2] == 3;
    CHECK(bad.passed == !three);
    if (three) CHECK(bad.status == "mismatch");
    mismatched += !bad.passed;
  }
  CHECK(passed == 15);
  CHECK(mismatched == 5);
}

TEST_CASE("compile and verify --spec run the Kernel Tuner-style kernel unchanged, the planted one exits 1") {
  using cutune::test::run_cutune;
  const auto compiled = run_cutune("compile --spec " + kKtStyle + "/blur.json --json");
  INFO_RUN(compiled);
  REQUIRE(compiled.status == 0);
  const nlohmann::json c = nlohmann::json::parse(compiled.out);
  CHECK(c["compiled"] == 15);
  CHECK(c["registers"]["min"].get<double>() > 0);
  const auto verified = run_cutune("verify --spec " + kKtStyle + "/blur.json");
  INFO_RUN(verified);
  CHECK(verified.status == 0);
  CHECK_THAT(verified.out, Contains("15 of 15 passed"));
  const auto planted = run_cutune("verify --spec " + kKtStyle + "/blur_planted.json");
  INFO_RUN(planted);
  CHECK(planted.status == 1);
  CHECK_THAT(planted.out, Contains("mismatch"));
}

TEST_CASE("a spec without arguments is refused: the kernel cannot run without them") {
  nlohmann::json j = spec_json({parameter("block_size_x", "[32]")});
  j["KernelSpecification"]["Arguments"] = nlohmann::json::array();
  CHECK_THAT(kernel_error(j), Contains("Arguments is empty"));
}
