// Needs a CUDA device; every case exits 77 (CTest's "skipped") with the reason when none exists.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "src/runtime/cuda_check.h"
#include "src/runtime/cuda_module.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/nvrtc_builder.h"
#include "tests/runtime/test_kernels.h"

using namespace cutune;

namespace {

void skip_without_device() {
  if (driver_api() != nullptr) return;
  std::cout << "skipped: no CUDA device found: " << driver_unavailable_reason() << std::endl;
  std::exit(77);
}

}  // namespace

TEST_CASE("devices are listed with sane limits", "[gpu]") {
  skip_without_device();
  const std::vector<DeviceInfo> devices = list_devices();
  REQUIRE_FALSE(devices.empty());
  for (const DeviceInfo& d : devices) {
    INFO(d.name << " " << d.arch());
    CHECK(d.sm_count > 0);
    CHECK(d.max_threads_per_block >= 1024);
    CHECK(d.max_shared_per_block_optin >= d.max_shared_per_block);
    CHECK(d.warp_size == 32);
    CHECK(d.total_mem > 0);
  }
}

TEST_CASE("a compiled kernel loads, launches and computes", "[gpu]") {
  skip_without_device();
  BuildOptions options;
  options.arch = default_arch();
  NvrtcBuilder builder(options);
  const CudaSource source = test::axpy_source("axpy", 2.0f);
  const CompileResult compiled = builder.compile(source);
  INFO(compiled.log);
  REQUIRE(compiled.ok());

  PrimaryContext context(0);
  context.make_current();
  Module module(compiled.to_cubin());
  CUfunction function = module.function(source.kernel_name, source.launch.dynamic_smem_bytes);

  int n = 256;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  DeviceBuffer dy(n * sizeof(float)), dx(n * sizeof(float));
  dy.upload(y.data());
  dx.upload(x.data());
  CUdeviceptr py = dy.get(), px = dx.get();
  void* args[] = {&py, &px, &n};
  launch_kernel(function, source.launch, args);
  CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
  dy.download(y.data());
  for (int i = 0; i < n; ++i) CHECK(y[i] == 2.0f * i + 1.0f);
}

TEST_CASE("dynamic shared memory above 48 KiB is opted into", "[gpu]") {
  skip_without_device();
  const DeviceInfo device = list_devices().front();
  CudaSource source;
  source.kernel_name = "big_smem";
  source.code =
      "extern \"C\" __global__ void big_smem(float* y) {\n"
      "  extern __shared__ float s[];\n"
      "  s[threadIdx.x] = 3.0f;\n"
      "  __syncthreads();\n"
      "  y[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];\n"
      "}\n";
  source.launch.grid = {1, 1, 1};
  source.launch.block = {64, 1, 1};
  source.launch.dynamic_smem_bytes = 64 * 1024;
  if (device.max_shared_per_block_optin < 64 * 1024) {
    WARN("device " << device.name << " cannot opt into 64 KiB of shared memory");
    return;
  }

  BuildOptions options;
  options.arch = device.arch();
  NvrtcBuilder builder(options);
  const CompileResult compiled = builder.compile(source);
  REQUIRE(compiled.ok());
  PrimaryContext context(0);
  context.make_current();
  Module module(compiled.to_cubin());
  CUfunction function = module.function(source.kernel_name, source.launch.dynamic_smem_bytes);
  DeviceBuffer dy(64 * sizeof(float));
  dy.fill_bytes(0);
  CUdeviceptr py = dy.get();
  void* args[] = {&py};
  launch_kernel(function, source.launch, args);
  CUTUNE_CU_CHECK(require_driver().cuCtxSynchronize());
  std::vector<float> y(64);
  dy.download(y.data());
  for (float v : y) CHECK(v == 3.0f);
}
