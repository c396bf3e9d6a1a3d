#include "src/runtime/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace cutune {

void* open_cuda_library(const std::initializer_list<const char*>& names, std::string* error) {
  std::vector<std::string> folders;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env)) folders.push_back(v);
  folders.push_back("/usr/local/cuda");
  std::string first_error;
  for (const char* name : names) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    if (first_error.empty())
      if (const char* e = dlerror()) first_error = e;
  }
  for (const std::string& folder : folders)
    for (const char* sub : {"/lib64/", "/lib/", "/extras/CUPTI/lib64/"})
      for (const char* name : names)
        if (void* h = dlopen((folder + sub + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  if (error) *error = "cannot load " + std::string(*names.begin()) + ": " + first_error;
  return nullptr;
}

}  // namespace cutune
