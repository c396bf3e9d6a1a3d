// TMA and mbarrier kernels on a GPU of compute capability 9.0 or later: the same generated CUDA
// as the emulator's tests (tests/emulator/tma_test_kernels.h), with tensor maps encoded by the
// driver, must give the outputs the emulator gives. Every case exits 77 (skipped) with the
// reason where there is no such GPU.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "src/runtime/cuda_check.h"
#include "src/runtime/cuda_module.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/runtime/tensor_map_encode.h"
#include "tests/emulator/tma_test_kernels.h"

using namespace cutune;
using namespace cutune::test::tma;

namespace {

void skip_without_hopper() {
  if (driver_api() == nullptr) {
    std::cout << "skipped: no CUDA device found: " << driver_unavailable_reason() << std::endl;
    std::exit(77);
  }
  if (list_devices().front().cc_major < 9) {
    std::cout << "skipped: TMA needs compute capability 9.0, device 0 is "
              << list_devices().front().arch() << std::endl;
    std::exit(77);
  }
}

// Runs `src` on device 0 with `inputs` after the zeroed output (parameter 0) and the tensor
// maps encoded over their buffers; returns the output.
std::vector<float> run_on_gpu(const CudaSource& src, const std::vector<std::vector<char>>& inputs,
                              size_t out_floats) {
  BuildOptions options;
  options.arch = "sm_90a";
  NvrtcBuilder builder(options);
  const CompileResult compiled = builder.compile(src);
  INFO(compiled.log);
  REQUIRE(compiled.ok());
  PrimaryContext context(0);
  context.make_current();
  Module module(compiled.to_cubin());
  CUfunction function = module.function(src.kernel_name, src.launch.dynamic_smem_bytes);

  std::vector<DeviceBuffer> buffers;
  buffers.emplace_back(out_floats * sizeof(float));
  buffers.back().fill_bytes(0);
  for (const std::vector<char>& in : inputs) {
    buffers.emplace_back(in.size());
    buffers.back().upload(in.data());
  }
  std::vector<CUdeviceptr> pointers;
  for (const DeviceBuffer& b : buffers) pointers.push_back(b.get());
  std::vector<CUtensorMap> maps;
  maps.reserve(src.params.size());
  std::vector<void*> args;
  size_t next = 0;
  for (const KernelParam& p : src.params) {
    if (p.is_pointer) {
      args.push_back(&pointers[next++]);
      continue;
    }
    REQUIRE(p.tensor_map);
    size_t index = 0;
    while (src.params[index].name != p.tensor_map->buffer) ++index;
    maps.push_back(encode_tensor_map(require_driver(), *p.tensor_map, src.params[index].elements,
                                     pointers[index]));
    args.push_back(&maps.back());
  }
  launch_kernel(function, src.launch, args.data());
  CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
  std::vector<float> out(out_floats);
  buffers.front().download(out.data());
  return out;
}

template <class T>
std::vector<char> bytes_of(const std::vector<T>& v) {
  const char* p = reinterpret_cast<const char*>(v.data());
  return std::vector<char>(p, p + v.size() * sizeof(T));
}

}  // namespace

TEST_CASE("TMA tile loads give the emulator's result on the GPU", "[gpu][tma]") {
  skip_without_hopper();
  for (TmaSwizzle swizzle : {TmaSwizzle::none, TmaSwizzle::b128}) {
    // Issued by thread 0, and by the lane elect.sync picks in warp 1 (as the GEMMs issue).
    for (bool elect : {false, true}) {
      TileKernel k{37, 29, 40, swizzle};
      k.elect_issuer = elect;
      INFO("swizzle " << swizzle_name(swizzle) << (elect ? ", elected issuer" : ""));
      std::vector<float> out = run_on_gpu(
          generate(k.build()), {bytes_of(k.input()), bytes_of(k.perm())}, size_t(k.out_elements()));
      CHECK(out == k.expected());
    }
  }
}

TEST_CASE("the three-stage TMA ring gives the emulator's result on the GPU", "[gpu][tma]") {
  skip_without_hopper();
  RingKernel k;
  std::vector<float> out =
      run_on_gpu(generate(k.build()), {bytes_of(k.input())}, k.expected().size());
  CHECK(out == k.expected());
}
