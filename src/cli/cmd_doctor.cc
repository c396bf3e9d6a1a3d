// cutune doctor: what this machine offers cutune — devices, the driver, and where each CUDA
// library was found (with its version) or every place it was looked for. Informative: it exits
// 0 whenever it could report, and says plainly what is missing and what that costs.
//
// Versions are asked of each library through its own entry point (dlsym on the handle the
// search returned), so doctor reports the library that cutune actually loads.

#include <dlfcn.h>

#include <cstdint>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/cli/cli_common.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"

namespace cutune::cli {

namespace {

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// The library's own version, "" when it has no way to tell or the call fails.
std::string library_version(CudaLibrary library, void* handle) {
  switch (library) {
    case CudaLibrary::driver: {
      auto get = symbol<int (*)(int*)>(handle, "cuDriverGetVersion");
      int v = 0;
      if (get && get(&v) == 0) return fmt::format("CUDA {}.{}", v / 1000, v % 1000 / 10);
      return "";
    }
    case CudaLibrary::nvrtc: {
      auto get = symbol<int (*)(int*, int*)>(handle, "nvrtcVersion");
      int major = 0, minor = 0;
      if (get && get(&major, &minor) == 0) return fmt::format("{}.{}", major, minor);
      return "";
    }
    case CudaLibrary::cupti: {
      auto get = symbol<int (*)(uint32_t*)>(handle, "cuptiGetVersion");
      uint32_t v = 0;
      if (get && get(&v) == 0) return fmt::format("API {}", v);
      return "";
    }
    case CudaLibrary::cublas: {
      // cublasGetProperty(MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2).
      auto get = symbol<int (*)(int, int*)>(handle, "cublasGetProperty");
      int part[3] = {0, 0, 0};
      if (get && get(0, &part[0]) == 0 && get(1, &part[1]) == 0 && get(2, &part[2]) == 0)
        return fmt::format("{}.{}.{}", part[0], part[1], part[2]);
      return "";
    }
    case CudaLibrary::cublas_lt:
    case CudaLibrary::cudnn: {
      // Both encode major * 10000 + minor * 100 + patch (cuDNN since 9).
      auto get = symbol<size_t (*)()>(
          handle, library == CudaLibrary::cudnn ? "cudnnGetVersion" : "cublasLtGetVersion");
      if (!get) return "";
      const size_t v = get();
      return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
    }
    case CudaLibrary::nvml: {
      auto init = symbol<int (*)()>(handle, "nvmlInit_v2");
      auto get = symbol<int (*)(char*, unsigned)>(handle, "nvmlSystemGetDriverVersion");
      char text[96] = {};
      if (init && get && init() == 0 && get(text, sizeof text) == 0) return text;
      return "";
    }
  }
  return "";
}

// What each library is for, so that "missing" says what it costs.
std::string_view needed_for(CudaLibrary library) {
  switch (library) {
    case CudaLibrary::driver:
      return "every GPU measurement";
    case CudaLibrary::nvrtc:
      return "compiling candidates (compile, verify, tune, export)";
    case CudaLibrary::cupti:
      return "kernel timing by CUPTI (CUDA events are used without it)";
    case CudaLibrary::cublas:
      return "the GEMM reference and baseline";
    case CudaLibrary::cublas_lt:
      return "cuBLAS (it loads cuBLASLt)";
    case CudaLibrary::cudnn:
      return "the convolution reference and baseline";
    case CudaLibrary::nvml:
      return "clock and throttle readings around measurements";
  }
  return "";
}

nlohmann::json report() {
  nlohmann::json libraries = nlohmann::json::array();
  for (CudaLibrary library : kCudaLibraries) {
    const LibraryLookup& lookup = load_cuda_library(library);
    nlohmann::json entry = {{"name", library_display_name(library)},
                            {"key", library_key(library)},
                            {"file_names", library_file_names(library)},
                            {"found", lookup.found()},
                            {"needed_for", needed_for(library)}};
    if (lookup.found()) {
      entry["path"] = lookup.path;
      const std::string version = library_version(library, lookup.handle);
      entry["version"] = version.empty() ? nlohmann::json() : nlohmann::json(version);
    } else {
      entry["error"] = lookup.error();
    }
    entry["tried"] = lookup.tried;
    libraries.push_back(std::move(entry));
  }

  nlohmann::json driver = {{"usable", driver_api() != nullptr}};
  if (const DriverApi* api = loaded_driver_library()) {
    int v = 0;
    if (api->cuDriverGetVersion(&v) == CUDA_SUCCESS)
      driver["cuda_version"] = fmt::format("{}.{}", v / 1000, v % 1000 / 10);
  }
  // The kernel driver's own version ("580.65.06") is NVML's to tell.
  if (const LibraryLookup& n = load_cuda_library(CudaLibrary::nvml); n.found())
    if (std::string v = library_version(CudaLibrary::nvml, n.handle); !v.empty())
      driver["version"] = v;
  if (driver_api() == nullptr) driver["reason"] = driver_unavailable_reason();

  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceInfo& d : list_devices())
    devices.push_back({{"ordinal", d.ordinal},
                       {"name", d.name},
                       {"arch", d.arch()},
                       {"sm_count", d.sm_count},
                       {"memory_bytes", d.total_mem},
                       {"clock_khz", d.clock_khz},
                       {"l2_bytes", d.l2_bytes}});

  nlohmann::json folders = nlohmann::json::array();
  for (const auto& f : library_folders(SearchEnvironment::from_process())) folders.push_back(f);
  nlohmann::json missing = nlohmann::json::array();
  for (const nlohmann::json& l : libraries)
    if (!l["found"].get<bool>()) missing.push_back(l["name"]);
  return {{"devices", devices},
          {"driver", driver},
          {"libraries", libraries},
          {"missing", missing},
          {"search_folders", folders}};
}

void print_text(const nlohmann::json& r) {
  std::cout << fmt::format("devices: {}\n", r["devices"].size());
  for (const nlohmann::json& d : r["devices"])
    std::cout << fmt::format("  {}: {} ({}, {} SMs, {:.1f} GiB)\n", d["ordinal"].get<int>(),
                             d["name"].get<std::string>(), d["arch"].get<std::string>(),
                             d["sm_count"].get<int>(), d["memory_bytes"].get<double>() / (1 << 30));
  const nlohmann::json& drv = r["driver"];
  std::cout << "driver: "
            << (drv.contains("version") ? drv["version"].get<std::string>() + ", " : std::string())
            << (drv.contains("cuda_version") ? "CUDA " + drv["cuda_version"].get<std::string>()
                                             : std::string("not loaded"))
            << (drv["usable"].get<bool>() ? ""
                                          : " (unusable: " + drv["reason"].get<std::string>() + ")")
            << "\nlibraries:\n";
  for (const nlohmann::json& l : r["libraries"]) {
    const std::string name = l["name"];
    if (l["found"].get<bool>())
      std::cout << fmt::format("  {:<12} {:<22} {}\n", name,
                               l["version"].is_null() ? "-" : l["version"].get<std::string>(),
                               l["path"].get<std::string>());
    else
      std::cout << fmt::format("  {:<12} MISSING: {}\n", name, l["error"].get<std::string>());
  }
  if (r["missing"].empty()) {
    std::cout << "everything cutune can use is here\n";
    return;
  }
  std::cout << "missing:\n";
  for (const nlohmann::json& l : r["libraries"])
    if (!l["found"].get<bool>())
      std::cout << fmt::format("  {} (needed for {}); looked in {} places:\n",
                               l["name"].get<std::string>(), l["needed_for"].get<std::string>(),
                               l["tried"].size())
                << fmt::format("    {}\n",
                               fmt::join(l["tried"].get<std::vector<std::string>>(), "\n    "));
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "doctor", "devices, driver, and where each CUDA library was found or looked for");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "machine-readable output");
  cmd->callback([json] {
    const nlohmann::json r = report();
    if (*json)
      print_json(r);
    else
      print_text(r);
  });
}

}  // namespace cutune::cli
