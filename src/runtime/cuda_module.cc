#include "src/runtime/cuda_module.h"

#include <utility>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"

namespace cutune {

namespace {

constexpr uint32_t kStaticSharedLimit = 48 * 1024;

}  // namespace

PrimaryContext::PrimaryContext(int ordinal) {
  const DriverApi& api = require_driver();
  CUTUNE_CU_CHECK(api.cuDeviceGet(&device_, ordinal));
  CUTUNE_CU_CHECK(api.cuDevicePrimaryCtxRetain(&context_, device_));
}

PrimaryContext::~PrimaryContext() {
  if (context_ != nullptr) driver_api()->cuDevicePrimaryCtxRelease_v2(device_);
}

PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : device_(other.device_), context_(std::exchange(other.context_, nullptr)) {}

void PrimaryContext::make_current() const {
  CUTUNE_CU_CHECK(require_driver().cuCtxSetCurrent(context_));
}

Module::Module(const Cubin& cubin) {
  CUTUNE_CU_CHECK(require_driver().cuModuleLoadData(&module_, cubin.image.data()));
}

Module::~Module() {
  if (module_ != nullptr) driver_api()->cuModuleUnload(module_);
}

Module::Module(Module&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    if (module_ != nullptr) driver_api()->cuModuleUnload(module_);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

CUfunction Module::function(const std::string& name, uint32_t dynamic_smem_bytes) const {
  const DriverApi& api = require_driver();
  CUfunction function = nullptr;
  CUTUNE_CU_CHECK(api.cuModuleGetFunction(&function, module_, name.c_str()));
  if (dynamic_smem_bytes > kStaticSharedLimit)
    CUTUNE_CU_CHECK(api.cuFuncSetAttribute(function,
                                           CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(dynamic_smem_bytes)));
  return function;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes_ > 0) CUTUNE_CU_CHECK(require_driver().cuMemAlloc_v2(&pointer_, bytes_));
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != 0) driver_api()->cuMemFree_v2(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_ != 0) driver_api()->cuMemFree_v2(pointer_);
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host) {
  if (bytes_ > 0) CUTUNE_CU_CHECK(require_driver().cuMemcpyHtoD_v2(pointer_, host, bytes_));
}

void DeviceBuffer::download(void* host) const {
  if (bytes_ > 0) CUTUNE_CU_CHECK(require_driver().cuMemcpyDtoH_v2(host, pointer_, bytes_));
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_ > 0) CUTUNE_CU_CHECK(require_driver().cuMemsetD8_v2(pointer_, value, bytes_));
}

void launch_kernel(CUfunction function, const LaunchSpec& launch, void** args, CUstream stream) {
  CUTUNE_CU_CHECK(require_driver().cuLaunchKernel(
      function, launch.grid.x, launch.grid.y, launch.grid.z, launch.block.x, launch.block.y,
      launch.block.z, launch.dynamic_smem_bytes, stream, args, nullptr));
}

}  // namespace cutune
