#include "src/tune/gpu_measurer.h"

#include "src/runtime/driver_api.h"

namespace cutune {

std::unique_ptr<Measurer> make_gpu_measurer(const Template& tmpl,
                                            const GpuMeasureOptions& options) {
  require_driver();
  // TODO: the GPU measurer (timing, checking, worker isolation) is not written yet; until it
  // is, a machine with a GPU cannot tune for real either.
  throw NoDeviceError("no CUDA device found: the GPU measurer is not built yet");
}

}  // namespace cutune
