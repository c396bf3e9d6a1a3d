// cutune._loader: the launch half of cutune.load(), over src/export/cubin_loader.h, so that
// Python and C++ users launch exported kernels through one loader. Python checks the arguments
// against the manifest first (src/python/cutune/kernels.py); this module only makes the
// context current, loads the cubin once per device and launches on the caller's stream.
//
// It links libcuda, so importing it needs the CUDA driver: cutune imports it on the first
// launch, and a machine without a driver can still import cutune, tune and check arguments.

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "src/export/cubin_loader.h"

namespace nb = nanobind;

namespace {

// The primary context of `ordinal` current on this thread (the one PyTorch uses), unless a
// context of that device already is.
void make_current(int ordinal) {
  cutune_loader::check(cuInit(0), "cuInit");
  CUcontext current = nullptr;
  cutune_loader::check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != nullptr) {
    CUdevice device;
    if (cuCtxGetDevice(&device) == CUDA_SUCCESS && device == ordinal) return;
  }
  CUdevice device;
  cutune_loader::check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
  CUcontext primary = nullptr;
  cutune_loader::check(cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain");
  cutune_loader::check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
}

// One exported kernel: its manifest entry, loaded on each device it is launched on.
class Launcher {
 public:
  Launcher(const std::string& dir, const std::string& name) : dir_(dir) {
    for (cutune_loader::KernelManifest& m : cutune_loader::read_manifest(dir)) {
      if (m.name == name) manifest_ = std::move(m);
    }
    if (manifest_.name.empty())
      throw std::runtime_error(dir + "/manifest.json has no kernel named " + name);
  }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // `buffers`: device pointers by parameter name (a tensor map is encoded over the buffer its
  // description names); `scalars`: the float32 by-value parameters (an epilogue's alpha, beta);
  // `m` > 0: a kernel of run-time M launched for that M. The loader's launch_buffers and
  // launch_m zero the zero_init outputs on `stream`, then launch on it.
  void launch(int device, const std::map<std::string, uint64_t>& buffers,
              const std::map<std::string, double>& scalars, uint64_t stream_handle, int64_t m) {
    make_current(device);
    auto& loaded = loaded_[device];
    if (!loaded) loaded = std::make_unique<cutune_loader::LoadedKernel>(manifest_, dir_);
    const CUstream stream = reinterpret_cast<CUstream>(stream_handle);
    std::map<std::string, CUdeviceptr> named;
    for (const auto& [name, pointer] : buffers) named[name] = static_cast<CUdeviceptr>(pointer);
    if (m > 0) {
      if (!scalars.empty())
        throw std::runtime_error(manifest_.name + ": a run-time-M kernel takes no other scalars");
      loaded->launch_m(m, named, stream);
      return;
    }
    std::map<std::string, float> values;
    for (const auto& [name, value] : scalars) values[name] = static_cast<float>(value);
    loaded->launch_buffers(named, stream, values);
  }

 private:
  std::string dir_;
  cutune_loader::KernelManifest manifest_;
  std::map<int, std::unique_ptr<cutune_loader::LoadedKernel>> loaded_;
};

}  // namespace

NB_MODULE(_loader, m) {
  m.doc() = "cutune's kernel loader (src/export/cubin_loader.h) for cutune.load()";
  nb::class_<Launcher>(m, "Launcher")
      .def(nb::init<const std::string&, const std::string&>(), nb::arg("dir"), nb::arg("name"))
      .def("launch", &Launcher::launch, nb::arg("device"), nb::arg("buffers"),
           nb::arg("scalars"), nb::arg("stream"), nb::arg("m") = 0);
}
