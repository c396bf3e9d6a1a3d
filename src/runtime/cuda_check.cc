#include "src/runtime/cuda_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/runtime/driver_api.h"

namespace cutune {

namespace {

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string format_message(const std::string& library, int code, const std::string& call,
                           const std::string& description, const char* file, int line) {
  return one_line(fmt::format("{}:{}: {} failed with {} status {}: {}", file, line, call, library,
                              code, description));
}

}  // namespace

CudaError::CudaError(std::string library, int code, std::string call, std::string description,
                     const char* file, int line)
    : std::runtime_error(format_message(library, code, call, description, file, line)),
      library_(std::move(library)),
      code_(code),
      call_(std::move(call)),
      description_(std::move(description)) {}

void throw_cuda_error(const char* library, int code, const char* call, std::string description,
                      const char* file, int line) {
  throw CudaError(library, code, call, std::move(description), file, line);
}

std::string driver_error_text(CUresult result) {
  const DriverApi* api = loaded_driver_library();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api != nullptr) {
    if (api->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (api->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  if (text == nullptr) return name;
  return fmt::format("{} ({})", name, text);
}

}  // namespace cutune
