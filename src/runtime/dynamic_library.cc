#include "src/runtime/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <system_error>

namespace cutune {

namespace fs = std::filesystem;

namespace {

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string last_dlerror() {
  const char* e = dlerror();
  return one_line(e ? e : "unknown dlopen error");
}

bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The entries of `folder` whose names start with `prefix`, sorted; none when it is unreadable.
std::vector<fs::path> entries_starting_with(const fs::path& folder, std::string_view prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

void add_unique(std::vector<fs::path>& list, const fs::path& p) {
  if (!is_folder(p)) return;
  // Canonical, so that /usr/local/cuda and the /usr/local/cuda-13.0 it links to count once.
  std::error_code ec;
  fs::path normal = fs::canonical(p, ec);
  if (ec) normal = p.lexically_normal();
  if (std::find(list.begin(), list.end(), normal) == list.end()) list.push_back(normal);
}

// prefix/lib/python3*/{site,dist}-packages, newest Python first.
void add_site_packages_of(std::vector<fs::path>& list, const fs::path& prefix) {
  std::vector<fs::path> versions = entries_starting_with(prefix / "lib", "python3");
  std::reverse(versions.begin(), versions.end());
  for (const fs::path& v : versions)
    for (const char* kind : {"site-packages", "dist-packages"}) add_unique(list, v / kind);
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The file a handle was loaded from, as the dynamic linker recorded it.
std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return fallback;
}

// "what: why", without repeating `what` when the linker's message already starts with it.
std::string attempt(const std::string& what, const std::string& why) {
  return why.rfind(what, 0) == 0 ? why : what + ": " + why;
}

// Tries each folder / name in order until one loads; records every miss in `lookup.tried`.
void try_folders(const std::vector<std::string>& names, const std::vector<fs::path>& folders,
                 LibraryLookup& lookup) {
  for (const fs::path& folder : folders) {
    bool any = false;
    for (const std::string& name : names) {
      const fs::path file = folder / name;
      std::error_code ec;
      if (!fs::exists(file, ec)) continue;
      any = true;
      if (void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        lookup.handle = h;
        lookup.path = loaded_path(h, file.string());
        return;
      }
      lookup.tried.push_back(attempt(file.string(), last_dlerror()));
    }
    if (!any) {
      std::string listed;
      for (const std::string& name : names) listed += (listed.empty() ? "" : " or ") + name;
      lookup.tried.push_back(folder.string() + "/: no " + listed);
    }
  }
}

}  // namespace

std::string_view library_display_name(CudaLibrary library) {
  switch (library) {
    case CudaLibrary::driver:
      return "CUDA driver";
    case CudaLibrary::nvrtc:
      return "NVRTC";
    case CudaLibrary::cupti:
      return "CUPTI";
    case CudaLibrary::cublas:
      return "cuBLAS";
    case CudaLibrary::cublas_lt:
      return "cuBLASLt";
    case CudaLibrary::cudnn:
      return "cuDNN";
    case CudaLibrary::nvml:
      return "NVML";
  }
  return "?";
}

std::string_view library_key(CudaLibrary library) {
  switch (library) {
    case CudaLibrary::driver:
      return "driver";
    case CudaLibrary::nvrtc:
      return "nvrtc";
    case CudaLibrary::cupti:
      return "cupti";
    case CudaLibrary::cublas:
      return "cublas";
    case CudaLibrary::cublas_lt:
      return "cublaslt";
    case CudaLibrary::cudnn:
      return "cudnn";
    case CudaLibrary::nvml:
      return "nvml";
  }
  return "?";
}

std::vector<std::string> library_file_names(CudaLibrary library) {
  // The driver and NVML come with the kernel driver and have one soname; the unversioned
  // names of the others are the toolkit's development links, last resort.
  switch (library) {
    case CudaLibrary::driver:
      return {"libcuda.so.1"};
    case CudaLibrary::nvrtc:
      return {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    case CudaLibrary::cupti:
      return {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    case CudaLibrary::cublas:
      return {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    case CudaLibrary::cublas_lt:
      return {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
    case CudaLibrary::cudnn:
      return {"libcudnn.so.9", "libcudnn.so"};
    case CudaLibrary::nvml:
      return {"libnvidia-ml.so.1"};
  }
  return {};
}

std::string LibraryLookup::error() const {
  if (found()) return "";
  std::string text = "not found";
  if (!tried.empty())
    text += " (tried " + std::to_string(tried.size()) + " places; first: " + tried.front() + ")";
  return text;
}

SearchEnvironment SearchEnvironment::from_process() {
  SearchEnvironment env;
  for (const char* name : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string v = env_or_empty(name); !v.empty()) env.cuda_homes.push_back(v);
  env.roots.push_back("/usr/local/cuda");
  std::vector<fs::path> versioned = entries_starting_with("/usr/local", "cuda-");
  env.roots.insert(env.roots.end(), versioned.rbegin(), versioned.rend());
  env.roots.push_back("/usr/local/nvidia");  // the driver in NVIDIA's container images
  env.roots.push_back("/usr/lib/wsl");
  env.site_packages = python_site_packages();
  return env;
}

std::vector<fs::path> library_folders(const SearchEnvironment& environment) {
  std::vector<fs::path> folders;
  std::vector<fs::path> roots(environment.cuda_homes.begin(), environment.cuda_homes.end());
  roots.insert(roots.end(), environment.roots.begin(), environment.roots.end());
  for (const fs::path& root : roots)
    for (const char* sub : {"lib64", "lib", "extras/CUPTI/lib64"}) add_unique(folders, root / sub);
  for (const fs::path& site : environment.site_packages) {
    // CUDA 13 wheels share nvidia/cu13/lib; older ones have one folder per library.
    add_unique(folders, site / "nvidia" / "cu13" / "lib");
    for (const fs::path& package : entries_starting_with(site / "nvidia", ""))
      add_unique(folders, package / "lib");
  }
  return folders;
}

std::vector<fs::path> python_site_packages() {
  std::vector<fs::path> prefixes;
  for (const char* name : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (std::string v = env_or_empty(name); !v.empty()) prefixes.push_back(v);
  // A python3 at PREFIX/bin/python3 on $PATH has its packages under PREFIX/lib: that is how a
  // venv or conda environment that is "activated" only through PATH is found.
  const std::string path = env_or_empty("PATH");
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find(':', start), path.size());
    const fs::path dir = path.substr(start, end - start);
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / "python3", ec)) prefixes.push_back(dir.parent_path());
    start = end + 1;
  }
  for (const fs::path& opt : entries_starting_with("/opt", "")) {
    prefixes.push_back(opt / ".venv");
    prefixes.push_back(opt / "venv");
    prefixes.push_back(opt);
  }
  if (std::string home = env_or_empty("HOME"); !home.empty())
    prefixes.push_back(fs::path(home) / ".local");
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  std::vector<fs::path> sites;
  for (const fs::path& prefix : prefixes) add_site_packages_of(sites, prefix);
  return sites;
}

const std::vector<fs::path>& python_reported_site_packages() {
  static std::vector<fs::path> sites;
  static std::once_flag once;
  std::call_once(once, [] {
    // Without LD_LIBRARY_PATH, so that libraries packed for cutune never reach Python.
    FILE* pipe = popen(
        "env -u LD_LIBRARY_PATH timeout 5 python3 -c "
        "\"import site; print('\\n'.join(site.getsitepackages() + "
        "[site.getusersitepackages()]))\" 2>/dev/null",
        "r");
    if (pipe == nullptr) return;
    std::string text;
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
    pclose(pipe);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      add_unique(sites, text.substr(start, end - start));
      start = end + 1;
    }
  });
  return sites;
}

LibraryLookup find_library(const std::vector<std::string>& names,
                           const std::vector<fs::path>& folders) {
  LibraryLookup lookup;
  for (const std::string& name : names) {
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lookup.handle = h;
      lookup.path = loaded_path(h, name);
      return lookup;
    }
    lookup.tried.push_back(attempt(name, last_dlerror()));
  }
  try_folders(names, folders, lookup);
  return lookup;
}

const LibraryLookup& load_cuda_library(CudaLibrary library) {
  static std::array<LibraryLookup, kCudaLibraries.size()> lookups;
  static std::array<std::once_flag, kCudaLibraries.size()> once;
  const size_t i = static_cast<size_t>(library);
  std::call_once(once[i], [library, i] {
    // libcublas needs libcublasLt; loading it first (from wherever it is) lets a libcublas
    // found by its full path resolve it even outside the linker's search path.
    if (library == CudaLibrary::cublas) load_cuda_library(CudaLibrary::cublas_lt);
    const std::vector<std::string> names = library_file_names(library);
    const std::vector<fs::path> folders = library_folders(SearchEnvironment::from_process());
    LibraryLookup lookup = find_library(names, folders);
    if (!lookup.found()) {
      // The fixed list missed: ask the machine's Python where its packages live.
      SearchEnvironment reported;
      reported.site_packages = python_reported_site_packages();
      std::vector<fs::path> more;
      for (const fs::path& f : library_folders(reported))
        if (std::find(folders.begin(), folders.end(), f) == folders.end()) more.push_back(f);
      try_folders(names, more, lookup);
    }
    lookups[i] = std::move(lookup);
  });
  return lookups[i];
}

void* open_cuda_library(CudaLibrary library, std::string* error) {
  const LibraryLookup& lookup = load_cuda_library(library);
  if (!lookup.found() && error != nullptr)
    *error = "cannot load " + library_file_names(library).front() + ": " + lookup.error();
  return lookup.handle;
}

}  // namespace cutune
