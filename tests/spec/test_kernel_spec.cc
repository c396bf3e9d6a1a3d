#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "src/spec/spec_task.h"

using namespace cutune;
using namespace cutune::spec;
using Catch::Matchers::Contains;

TEST_CASE("conv2d example loads; a configuration gives defines, launch and sizes") {
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
  CHECK(src.params.size() == 4);  // d_filter is constant memory, not a parameter
  CHECK_THAT(src.code, Contains("#line 1 \"conv2d.cu\""));
  CHECK(task.emulator_source(in).params.size() == 5);
}
