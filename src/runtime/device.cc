#include "src/runtime/device.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"

namespace cutune {

namespace {

int attribute(const DriverApi& api, CUdevice device, CUdevice_attribute which) {
  int value = 0;
  CUTUNE_CU_CHECK(api.cuDeviceGetAttribute(&value, which, device));
  return value;
}

DeviceInfo query(const DriverApi& api, int ordinal) {
  CUdevice device = 0;
  CUTUNE_CU_CHECK(api.cuDeviceGet(&device, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  std::array<char, 256> name{};
  CUTUNE_CU_CHECK(api.cuDeviceGetName(name.data(), static_cast<int>(name.size()), device));
  info.name = name.data();
  auto get = [&](CUdevice_attribute which) { return attribute(api, device, which); };
  info.cc_major = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_shared_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.max_shared_per_block_optin = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.max_shared_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.reserved_shared_per_block = get(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  info.regs_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.regs_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.max_threads_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.max_blocks_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.warp_size = get(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.l2_bytes = get(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.clock_khz = get(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info.mem_clock_khz = get(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.mem_bus_width = get(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t total = 0;
  CUTUNE_CU_CHECK(api.cuDeviceTotalMem_v2(&total, device));
  info.total_mem = total;
  return info;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> devices;
  const DriverApi* api = driver_api();
  if (api == nullptr) return devices;
  for (int i = 0; i < api->device_count; ++i) devices.push_back(query(*api, i));
  return devices;
}

std::string default_arch() {
  const std::vector<DeviceInfo> devices = list_devices();
  return devices.empty() ? "sm_90" : devices.front().arch();
}

}  // namespace cutune
