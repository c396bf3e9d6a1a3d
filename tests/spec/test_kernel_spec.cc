#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "src/spec/spec_task.h"
#include "tests/dataset_skip.h"

using namespace cutune;
using namespace cutune::spec;
using Catch::Matchers::Contains;

TEST_CASE("conv2d example loads: a configuration gives defines, launch and sizes") {
  SpecTask task(load_kernel_spec(CUTUNE_SOURCE_DIR "/examples/conv2d/conv2d.json"));
  const KernelSpec& spec = task.spec();
  CHECK(spec.kernel_name == "conv2d");
  CHECK(spec.problem_size == std::vector<int64_t>{4096, 4096});
  REQUIRE(spec.arguments.size() == 5);
  CHECK(spec.arguments[2].is_constant);
  CHECK(spec.arguments[3].is_scalar);
  Config c = task.config_of({32, 4, 2, 1, 1, 1, 0, 7, 7});
  REQUIRE(task.space().is_valid(c));
  SpecInstance in = task.instantiate(c);
  CHECK(in.launch.block == Dim3{32, 4, 1});
  CHECK(in.launch.grid == Dim3{64, 1024, 1});
  CHECK(in.elements[1] == 4102 * 4102);
  CHECK(in.elements[2] == 49);
  CHECK(in.fill_values[3] == 4096);
  CHECK_THAT(in.defines, Contains("#define block_size_x 32\n"));
  CudaSource src = task.nvrtc_source(in);
  CHECK(src.params.size() == 5);  // d_filter fills constant memory and is a parameter too
  CHECK_THAT(src.code, Contains("#line 1 \"conv2d.cu\""));
  CHECK(task.emulator_source(in).params.size() == 5);
}

namespace {

const std::string kDir = CUTUNE_SOURCE_DIR "/examples/reduction";

nlohmann::json reduction_spec() {
  std::ifstream in(kDir + "/reduce.json");
  return nlohmann::json::parse(in);
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_kernel_spec(j, kDir + "/edited.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("bad specs fail with one line naming the field") {
  nlohmann::json j = reduction_spec();
  j.erase("KernelSpecification");
  CHECK_THAT(error_of(j), Contains("no \"KernelSpecification\""));
  j = reduction_spec();
  j.erase("ConfigurationSpace");
  CHECK_THAT(error_of(j), Contains("ConfigurationSpace"));
  j = reduction_spec();
  j["KernelSpecification"]["KernelFile"] = "absent.cu";
  CHECK_THAT(error_of(j), Contains("KernelSpecification.KernelFile: no file"));
  j = reduction_spec();
  j["ConfigurationSpace"]["Conditions"].push_back({{"Expression", "block_size_x <<< 2"}});
  CHECK_THAT(error_of(j), Contains("ConfigurationSpace.Conditions[1].Expression"));
  j = reduction_spec();
  j["KernelSpecification"]["GlobalSize"]["X"] = "grid_blockz";
  CHECK_THAT(error_of(j), Contains("GlobalSize.X: unknown name 'grid_blockz'"));
  j = reduction_spec();
  j["KernelSpecification"]["Arguments"][1]["Type"] = "float128";
  CHECK_THAT(error_of(j), Contains("Arguments[1].Type: unknown type 'float128'"));
  j = reduction_spec();
  j["KernelSpecification"]["Arguments"][1]["Size"] = "ProblemSize[1]";
  CHECK_THAT(error_of(j), Contains("Arguments[1].Size: unknown name 'ProblemSize[1]'"));
  j = reduction_spec();
  j["KernelSpecification"]["Arguments"][1]["FillType"] = "Gaussian";
  CHECK_THAT(error_of(j), Contains("Arguments[1].FillType is 'Gaussian'"));
  j = reduction_spec();
  j["KernelSpecification"]["Language"] = "OpenCL";
  CHECK_THAT(error_of(j), Contains("Language"));
  CHECK(error_of(reduction_spec()) == "no error");
}

TEST_CASE("a block over the device limit is named by its field") {
  nlohmann::json j = reduction_spec();
  j["ConfigurationSpace"]["TuningParameters"][0]["Values"] = "[2048]";
  SpecTask task(parse_kernel_spec(j, kDir + "/edited.json"));
  SpecInstance in = task.instantiate(task.space().get(0));
  auto why = SpecTask::launch_violation(in, target_limits("sm_90"));
  REQUIRE(why);
  CHECK_THAT(*why, Contains("LocalSize"));
}

TEST_CASE("the T1 specs of the shared datasets load, without their kernel file only the space") {
  const std::string dir = CUTUNE_SOURCE_DIR "/../shared/datasets/spaces";
  cutune::test::require_dataset_path(dir);  // or skip the test case visibly
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    INFO(entry.path());
    KernelSpec spec = load_kernel_spec(entry.path(), false);
    SpecTask task(spec);
    CHECK(task.space().size() > 0);
    if (!spec.kernel_error.empty()) {
      CHECK_THROWS_WITH(task.source(), Contains(spec.kernel_error));
    } else if (!spec.kernel_file_exists) {
      CHECK_THROWS_WITH(task.source(), Contains("KernelFile: no file"));
      // Compiling needs a CUDA kernel first (gemm_milo's is OpenCL), then its file.
      std::ifstream in(entry.path());
      const bool cuda = nlohmann::json::parse(in)["KernelSpecification"].value(
                            "Language", std::string("CUDA")) == "CUDA";
      CHECK_THROWS_WITH(load_kernel_spec(entry.path(), true),
                        Contains(cuda ? "KernelFile: no file" : "only \"CUDA\" is supported"));
    }
    ++loaded;
  }
  CHECK(loaded == 5);
}
