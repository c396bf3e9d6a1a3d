#include "src/runtime/nvrtc_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <charconv>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "src/runtime/cuda_check.h"

namespace cutune {

namespace {

// The number in "sm_90", "sm_90a" or "sm_100f", or -1.
int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  std::string_view digits(arch);
  digits.remove_prefix(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  int number = -1;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (error != std::errc{} || end != digits.data() + digits.size()) return -1;
  return number;
}

void check_arch(const std::string& arch) {
  const std::vector<int> supported = nvrtc_supported_archs();
  const int number = arch_number(arch);
  if (number >= 0 && std::find(supported.begin(), supported.end(), number) != supported.end())
    return;
  std::string known;
  for (int n : supported) known += fmt::format("{}sm_{}", known.empty() ? "" : ", ", n);
  throw std::invalid_argument(
      fmt::format("cannot compile for GPU architecture '{}' with NVRTC {} (supported: {})", arch,
                  nvrtc_version_string(), known));
}

std::vector<std::string> make_flags(const BuildOptions& options) {
  std::vector<std::string> flags = {
      "--gpu-architecture=" + options.arch,
      "-std=c++17",
      "-default-device",
      "--ptxas-options=-v",
  };
  if (options.use_fast_math) flags.emplace_back("--use_fast_math");
  if (options.line_info) flags.emplace_back("-lineinfo");
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

// The architecture a source compiles for: the builder's, or for a kernel that uses an
// architecture-specific feature set (sm_90a's wgmma), its "a" variant.
std::string arch_for(const BuildOptions& options, const CudaSource& source) {
  if (!source.arch_specific) return options.arch;
  return fmt::format("sm_{}a", arch_number(options.arch));
}

// Ours, then the source's own options; a -std among those replaces ours (NVRTC warns of two).
std::vector<std::string> flags_for(const std::vector<std::string>& ours, const CudaSource& source,
                                   const std::string& arch) {
  auto is_std = [](const std::string& f) { return f.starts_with("-std") || f.starts_with("--std"); };
  const bool own_std = std::any_of(source.compile_options.begin(), source.compile_options.end(),
                                   is_std);
  std::vector<std::string> flags;
  for (const std::string& f : ours)
    if (!(own_std && is_std(f))) flags.push_back(f);
  flags.front() = "--gpu-architecture=" + arch;
  flags.insert(flags.end(), source.compile_options.begin(), source.compile_options.end());
  return flags;
}

}  // namespace

NvrtcBuilder::NvrtcBuilder(BuildOptions options, int jobs,
                           std::optional<std::filesystem::path> cache_dir)
    : options_(std::move(options)),
      jobs_(jobs),
      flags_(make_flags(options_)),
      nvrtc_version_(nvrtc_version_string()),
      cache_(std::move(cache_dir)) {
  if (jobs_ < 1)
    throw std::invalid_argument(fmt::format("compile jobs must be at least 1, got {}", jobs_));
  check_arch(options_.arch);
}

uint64_t NvrtcBuilder::cache_key(const CudaSource& source) const {
  Fnv1a64 hash;
  hash.add("cutune-nvrtc-2").add(nvrtc_version_).add(source.kernel_name).add(source.code);
  for (const std::string& flag : flags_for(flags_, source, arch_for(options_, source)))
    hash.add(flag);
  return hash.value();
}

CompileResult NvrtcBuilder::compile(const CudaSource& source) {
  const uint64_t key = cache_key(source);
  if (std::optional<CompileResult> hit = cache_.find(key)) return *std::move(hit);
  CompileResult result = compile_uncached(source);
  cache_.insert(key, result);
  return result;
}

CompileResult NvrtcBuilder::compile_uncached(const CudaSource& source) const {
  const auto start = std::chrono::steady_clock::now();
  // The kernel is an NVRTC name expression, so that a template is instantiated and a kernel of
  // C++ linkage found: the result names the symbol NVRTC lowered it to.
  const bool plain_name = source.kernel_name.find_first_of("<:") == std::string::npos;
  NvrtcProgram program(source.code, (plain_name ? source.kernel_name : std::string("kernel")) + ".cu");
  CUTUNE_NVRTC_CHECK(nvrtc().nvrtcAddNameExpression(program.get(), source.kernel_name.c_str()));
  const std::string arch = arch_for(options_, source);
  const nvrtcResult status = program.compile(flags_for(flags_, source, arch));

  CompileResult result;
  result.kernel_name = source.kernel_name;
  if (status == NVRTC_SUCCESS) {
    const char* lowered = nullptr;
    CUTUNE_NVRTC_CHECK(
        nvrtc().nvrtcGetLoweredName(program.get(), source.kernel_name.c_str(), &lowered));
    result.kernel_name = lowered;
  }
  result.arch = arch;
  result.log = program.log();
  if (status == NVRTC_SUCCESS) {
    result.cubin = program.cubin();
    // Success without an image (extra flags asking for PTX only, say) leaves nothing to
    // load; that is reported like any other candidate that cannot run.
    result.status = result.cubin.empty() ? CompileStatus::compile_error : CompileStatus::ok;
  } else if (status == NVRTC_ERROR_COMPILATION) {
    result.status = CompileStatus::compile_error;
  } else {
    throw_cuda_error("NVRTC", static_cast<int>(status), "nvrtcCompileProgram",
                     nvrtc_error_text(status), __FILE__, __LINE__);
  }
  if (result.ok()) result.ptxas = parse_ptxas_info(result.log, result.kernel_name);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<CompileResult> NvrtcBuilder::compile_batch(const std::vector<CudaSource>& sources) {
  std::vector<CompileResult> results(sources.size());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;

  auto work = [&] {
    while (true) {
      const size_t i = next++;
      if (i >= sources.size()) return;
      try {
        results[i] = compile(sources[i]);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };

  const size_t threads = std::min(sources.size(), static_cast<size_t>(jobs_));
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace cutune
