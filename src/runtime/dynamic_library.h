#pragma once
// Finding and loading the CUDA libraries at run time, so that a binary starts on a machine
// without them and says which one is missing and everywhere it looked.
//
// One search list serves every library: first the dynamic linker's own search (LD_LIBRARY_PATH,
// the ld.so cache), then, in order, $CUDA_HOME and $CUDA_PATH, /usr/local/cuda, the driver's
// folders (/usr/local/nvidia, WSL's), each with lib64, lib and extras/CUPTI/lib64, and last the
// `nvidia/*/lib` folders of NVIDIA's Python wheels (nvidia/cu13/lib, nvidia/cudnn/lib,
// nvidia/cublas/lib, nvidia/cuda_nvrtc/lib, ...) in every site-packages found (see
// python_site_packages). Each library is loaded once per process and never unloaded.

#include <dlfcn.h>

#include <array>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cutune {

enum class CudaLibrary { driver, nvrtc, cupti, cublas, cublas_lt, cudnn, nvml };

inline constexpr std::array<CudaLibrary, 7> kCudaLibraries = {
    CudaLibrary::driver,    CudaLibrary::nvrtc, CudaLibrary::cupti, CudaLibrary::cublas,
    CudaLibrary::cublas_lt, CudaLibrary::cudnn, CudaLibrary::nvml};

// "CUDA driver", "NVRTC", "CUPTI", "cuBLAS", "cuBLASLt", "cuDNN", "NVML".
std::string_view library_display_name(CudaLibrary library);
// "driver", "nvrtc", "cupti", "cublas", "cublaslt", "cudnn", "nvml" (JSON keys).
std::string_view library_key(CudaLibrary library);
// The file names tried, newest first ("libcublas.so.13", "libcublas.so.12", "libcublas.so").
std::vector<std::string> library_file_names(CudaLibrary library);

// Thrown where a command needs a library that is not there (exit code 1, like a missing
// device). what() is one line naming the library and where it was looked for.
class MissingLibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The outcome of one search.
struct LibraryLookup {
  void* handle = nullptr;          // dlopen handle, nullptr when not found
  std::string path;                // the file that loaded (absolute), "" when not found
  std::vector<std::string> tried;  // every attempt in order: "<name or path>: <why not>"
  bool found() const { return handle != nullptr; }
  // One line: "cannot load libcudnn.so.9 (tried N places; first: ...)"; "" when found.
  std::string error() const;
};

// The places the search looks after the dynamic linker's default. from_process() fills it
// from this process's environment and machine; tests build their own.
struct SearchEnvironment {
  std::vector<std::string> cuda_homes;       // $CUDA_HOME, $CUDA_PATH
  std::vector<std::filesystem::path> roots;  // CUDA installations: /usr/local/cuda, ...
  std::vector<std::filesystem::path> site_packages;
  static SearchEnvironment from_process();
};
// The folders to try, in order, without duplicates; only those that exist.
std::vector<std::filesystem::path> library_folders(const SearchEnvironment& environment);

// site-packages folders of the Pythons on this machine, found without running Python:
// $VIRTUAL_ENV and $CONDA_PREFIX, the prefix of every python3 on $PATH, /opt/*/.venv,
// /usr/lib, /usr/local/lib and ~/.local (lib/python3*/{site,dist}-packages). Only folders
// that exist.
std::vector<std::filesystem::path> python_site_packages();
// What `python3 -c 'import site; ...'` reports (run once per process, lazily, without
// LD_LIBRARY_PATH, five-second cap); empty when Python is absent.
const std::vector<std::filesystem::path>& python_reported_site_packages();

// Tries `names` with the default search, then each of `folders` / name. Pure apart from
// dlopen; used by load_cuda_library and by tests with their own folders.
LibraryLookup find_library(const std::vector<std::string>& names,
                           const std::vector<std::filesystem::path>& folders);

// Loads `library` through the search list, once per process (thread-safe); when the fixed
// list misses, the site-packages Python reports are searched too.
const LibraryLookup& load_cuda_library(CudaLibrary library);

// The handle, or nullptr with `error` (when given) set to the one-line reason.
void* open_cuda_library(CudaLibrary library, std::string* error);

// `slot` = dlsym(library, name), or the name appended to `missing` (", "-separated).
template <typename F>
void resolve_symbol(void* library, const char* name, F& slot, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  if (slot == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
}

// A struct `Name` for loaded_table from an X-macro list of functions that the library's header
// declares: a pointer of the declared type for each, filled by resolve.
#define CUTUNE_TABLE_ENTRY(name) decltype(&::name) name = nullptr;
#define CUTUNE_TABLE_RESOLVE(name) resolve_symbol(library, #name, name, missing);
#define CUTUNE_FUNCTION_TABLE(Name, LIST)                                            \
  struct Name {                                                                      \
    LIST(CUTUNE_TABLE_ENTRY)                                                         \
    bool usable = false;                                                             \
    std::string reason;                                                              \
    void resolve(void* library, std::string& missing) { LIST(CUTUNE_TABLE_RESOLVE) } \
  };

// A table of a library's functions, loaded once per process (thread-safe). T has `bool
// usable`, `std::string reason` and `void resolve(void* library, std::string& missing)`, which
// fills its function pointers (resolve_symbol) and names the ones it could not. Unusable with
// the reason "<what> lacks <names>" when any is missing, or open_cuda_library's.
template <typename T>
const T& loaded_table(CudaLibrary library, const char* what) {
  static T table;
  static std::once_flag once;
  std::call_once(once, [&] {
    void* handle = open_cuda_library(library, &table.reason);
    if (handle == nullptr) return;
    std::string missing;
    table.resolve(handle, missing);
    if (!missing.empty()) {
      table.reason = std::string(what) + " lacks " + missing;
      return;
    }
    table.usable = true;
  });
  return table;
}

}  // namespace cutune
