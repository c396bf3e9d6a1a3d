// cutune._loader: the launch half of cutune.load(), over src/export/cubin_loader.h, so that
// Python and C++ users launch exported kernels through one loader. Python checks the arguments
// against the manifest first (src/python/cutune/kernels.py); this module only makes the
// context current, loads the cubin once per device and launches on the caller's stream.
//
// It links libcuda, so importing it needs the CUDA driver: cutune imports it on the first
// launch, and a machine without a driver can still import cutune, tune and check arguments.

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

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
  // description names); `scalars`: values of the by-value parameters; `m` > 0: a kernel of
  // run-time M launched for that M (the loader's launch_m). Zeroes the zero_init outputs on
  // `stream`, then launches on it.
  void launch(int device, const std::map<std::string, uint64_t>& buffers,
              const std::map<std::string, std::variant<int64_t, double>>& scalars,
              uint64_t stream_handle, int64_t m) {
    make_current(device);
    auto& loaded = loaded_[device];
    if (!loaded) loaded = std::make_unique<cutune_loader::LoadedKernel>(manifest_, dir_);
    const CUstream stream = reinterpret_cast<CUstream>(stream_handle);
    if (m > 0) {
      if (!scalars.empty())
        throw std::runtime_error(manifest_.name + ": a run-time-M kernel takes no other scalars");
      std::map<std::string, CUdeviceptr> named;
      for (const auto& [name, pointer] : buffers) named[name] = static_cast<CUdeviceptr>(pointer);
      loaded->launch_m(m, named, stream);
      return;
    }
    const size_t n = manifest_.params.size();
    std::vector<CUdeviceptr> pointers(n);
    std::vector<CUtensorMap> maps(n);
    std::vector<std::array<unsigned char, 8>> values(n);
    std::vector<void*> args(n);
    auto pointer = [&](const std::string& name) -> CUdeviceptr {
      auto it = buffers.find(name);
      if (it == buffers.end()) throw std::runtime_error("no buffer for parameter " + name);
      return static_cast<CUdeviceptr>(it->second);
    };
    for (size_t i = 0; i < n; ++i) {
      const cutune_loader::Param& p = manifest_.params[i];
      if (p.is_tensor_map) {
        maps[i] = cutune_loader::encode_tensor_map(p.tensor_map, pointer(p.tensor_map.buffer));
        args[i] = &maps[i];
      } else if (p.pointer) {
        pointers[i] = pointer(p.name);
        args[i] = &pointers[i];
      } else {
        args[i] = scalar(p, scalars, values[i]);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const cutune_loader::Param& p = manifest_.params[i];
      if (p.pointer && !p.is_tensor_map && p.zero_init)
        cutune_loader::check(cuMemsetD8Async(pointers[i], 0, static_cast<size_t>(p.bytes), stream),
                             "cuMemsetD8Async");
    }
    loaded->launch(args.data(), stream);
  }

 private:
  // The bytes of scalar parameter `p`, in `slot`, as its manifest type says.
  static void* scalar(const cutune_loader::Param& p,
                      const std::map<std::string, std::variant<int64_t, double>>& scalars,
                      std::array<unsigned char, 8>& slot) {
    auto it = scalars.find(p.name);
    if (it == scalars.end()) throw std::runtime_error("no value for scalar parameter " + p.name);
    const double real = std::visit([](auto v) { return static_cast<double>(v); }, it->second);
    const int64_t whole = std::visit([](auto v) { return static_cast<int64_t>(v); }, it->second);
    if (p.type == "float32") {
      const float f = static_cast<float>(real);
      std::memcpy(slot.data(), &f, sizeof f);
    } else if (p.type == "int32" || p.type == "uint32") {
      const int32_t v = static_cast<int32_t>(whole);
      std::memcpy(slot.data(), &v, sizeof v);
    } else if (p.type == "int64") {
      std::memcpy(slot.data(), &whole, sizeof whole);
    } else {
      throw std::runtime_error("scalar parameter " + p.name + " of type " + p.type +
                               " cannot be passed from Python");
    }
    return slot.data();
  }

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
