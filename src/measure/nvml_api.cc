#include "src/measure/nvml_api.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"

namespace cutune {

namespace {

// The few NVML declarations needed, written out because the toolkit does not always ship
// nvml.h. Values are NVML's documented ABI.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

constexpr uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40,
                   kHwPowerBrake = 0x80;

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  bool usable = false;
  std::string reason;
};

template <typename F>
void resolve(void* library, F& fn, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* name : names)
    if (void* p = dlsym(library, name)) {
      fn = reinterpret_cast<F>(p);
      return;
    }
  missing += (missing.empty() ? "" : ", ") + std::string(*names.begin());
}

const NvmlApi& nvml() {
  static NvmlApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = open_cuda_library(CudaLibrary::nvml, &api.reason);
    if (library == nullptr) return;
    std::string missing;
    resolve(library, api.init, {"nvmlInit_v2", "nvmlInit"}, missing);
    resolve(library, api.by_pci,
            {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"}, missing);
    resolve(library, api.clock, {"nvmlDeviceGetClockInfo"}, missing);
    resolve(library, api.max_clock, {"nvmlDeviceGetMaxClockInfo"}, missing);
    resolve(library, api.temperature, {"nvmlDeviceGetTemperature"}, missing);
    resolve(library, api.reasons,
            {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
            missing);
    if (!missing.empty()) {
      api.reason = "libnvidia-ml.so.1 lacks " + missing;
      return;
    }
    if (NvmlReturn r = api.init(); r != kNvmlSuccess) {
      api.reason = fmt::format("nvmlInit failed with {}", r);
      return;
    }
    api.usable = true;
  });
  return api;
}

}  // namespace

GpuState GpuSample::to_state() const {
  GpuState s;
  if (!available) {
    s.available = false;
    s.error = error;
    return s;
  }
  s.sm_clock_mhz = sm_clock_mhz;
  s.max_sm_clock_mhz = max_sm_clock_mhz;
  s.temperature_c = temperature_c;
  s.throttle_reasons = int64_t(throttle_reasons);
  s.throttled = throttled;
  return s;
}

bool is_throttling(uint64_t reasons) {
  return (reasons & (kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake)) != 0;
}

GpuSample sample_gpu(const std::string& pci_bus_id) {
  GpuSample s;
  const NvmlApi& api = nvml();
  if (!api.usable) {
    s.error = api.reason;
    return s;
  }
  NvmlDevice device = nullptr;
  if (NvmlReturn r = api.by_pci(pci_bus_id.c_str(), &device); r != kNvmlSuccess) {
    s.error = fmt::format("no NVML device at PCI {} (NVML error {})", pci_bus_id, r);
    return s;
  }
  unsigned long long reasons = 0;
  if (api.clock(device, kNvmlClockSm, &s.sm_clock_mhz) != kNvmlSuccess ||
      api.max_clock(device, kNvmlClockSm, &s.max_sm_clock_mhz) != kNvmlSuccess ||
      api.temperature(device, kNvmlTemperatureGpu, &s.temperature_c) != kNvmlSuccess ||
      api.reasons(device, &reasons) != kNvmlSuccess) {
    s.error = "an NVML query failed";
    return s;
  }
  s.throttle_reasons = reasons;
  s.throttled = is_throttling(reasons);
  s.available = true;
  return s;
}

GpuSample sample_cuda_device(int ordinal) {
  const DriverApi* driver = driver_api();
  if (driver == nullptr) {
    GpuSample s;
    s.error = "no CUDA driver";
    return s;
  }
  CUdevice device = 0;
  char bus_id[32] = {};
  if (driver->cuDeviceGet(&device, ordinal) != CUDA_SUCCESS ||
      driver->cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != CUDA_SUCCESS) {
    GpuSample s;
    s.error = fmt::format("cannot read the PCI bus id of CUDA device {}", ordinal);
    return s;
  }
  return sample_gpu(bus_id);
}

}  // namespace cutune
