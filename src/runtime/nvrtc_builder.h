#pragma once
// Compiles CudaSource values to cubins with NVRTC, in parallel and through a cache.
// NVRTC needs no GPU, so this works on any machine with the toolkit.
//
// Each compile asks ptxas for its verbose report and parses it into CompileResult::ptxas.
// The kernel_name is compiled as an NVRTC name expression, so a template ("scale<float, 128>")
// is instantiated and a kernel of C++ linkage found; the result's kernel_name is the lowered
// (mangled, for those) symbol to load. A source's compile_options follow ours.
// A source that does not compile gives status compile_error with NVRTC's log; only a broken
// environment (NVRTC refusing our options or running out of memory) throws CudaError.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/codegen/cuda_source.h"
#include "src/runtime/compile_cache.h"
#include "src/runtime/compile_result.h"
#include "src/runtime/nvrtc_program.h"
#include "src/runtime/ptxas_info.h"

namespace cutune {

struct BuildOptions {
  std::string arch = "sm_90";            // a real architecture NVRTC can emit a cubin for
  std::vector<std::string> extra_flags;  // appended after ours, verbatim
  bool use_fast_math = false;
  bool line_info = false;  // -lineinfo, for profilers
};

class NvrtcBuilder {
 public:
  // Throws std::invalid_argument (one line) when `options.arch` is not "sm_NN" (optionally
  // with an "a"/"f" suffix) for an NN this NVRTC supports, when jobs < 1, or when the
  // cache directory cannot be created.
  NvrtcBuilder(BuildOptions options, int jobs = 1,
               std::optional<std::filesystem::path> cache_dir = std::nullopt);

  // Thread-safe.
  CompileResult compile(const CudaSource& source);

  // Compiles on up to `jobs` threads; results[i] belongs to sources[i].
  std::vector<CompileResult> compile_batch(const std::vector<CudaSource>& sources);

  // The full NVRTC option list every compile uses; a source with `arch_specific` set is
  // compiled for the "a" variant of `options.arch` (sm_90 -> sm_90a) instead.
  const std::vector<std::string>& flags() const { return flags_; }
  const BuildOptions& options() const { return options_; }
  int jobs() const { return jobs_; }

  // The cache key of `source` under this builder's options and NVRTC version.
  uint64_t cache_key(const CudaSource& source) const;

 private:
  CompileResult compile_uncached(const CudaSource& source) const;

  BuildOptions options_;
  int jobs_;
  std::vector<std::string> flags_;
  std::string nvrtc_version_;
  CompileCache cache_;
};

}  // namespace cutune
