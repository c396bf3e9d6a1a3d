#pragma once
// GPU clock, temperature and throttling from NVML, loaded at run time (libnvidia-ml.so.1) so
// that nothing needs it to start. Sampled around each measurement: a sample taken while the GPU
// throttled (power cap, thermal or hardware slowdown) marks the timing as suspect.

#include <cstdint>
#include <string>

#include "src/records/measure_details.h"

namespace cutune {

struct GpuSample {
  bool available = false;  // false: NVML missing or the query failed (see error)
  unsigned sm_clock_mhz = 0;
  unsigned max_sm_clock_mhz = 0;
  unsigned temperature_c = 0;
  uint64_t throttle_reasons = 0;  // NVML's clocks-event reason bits
  bool throttled = false;
  std::string error;

  // As recorded in a result's details (gpu_before, gpu_after).
  GpuState to_state() const;
};

// Whether NVML's reason bits name a slowdown that distorts timings (software power cap,
// hardware slowdown, thermal slowdowns, power brake); idle and application clock settings
// do not count.
bool is_throttling(uint64_t reasons);

// Samples the device with this PCI bus id ("0000:3B:00.0", as cuDeviceGetPCIBusId writes it).
GpuSample sample_gpu(const std::string& pci_bus_id);

// Samples CUDA device `ordinal`, resolving its PCI bus id through the driver (NVML and CUDA
// may number devices differently).
GpuSample sample_cuda_device(int ordinal);

}  // namespace cutune
