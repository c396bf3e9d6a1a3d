#include "src/emulator/emulator.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "src/codegen/launch_grid.h"
#include "src/emulator/emu_assert.h"
#include "src/emulator/guarded_buffers.h"
#include "src/emulator/kernel_object.h"
#include "src/emulator/kernel_process.h"
#include "src/emulator/sanitizer.h"
#include "src/emulator/shared_layout.h"
#include "src/emulator/source_lines.h"
#include "src/emulator/temp_dirs.h"
#include "src/emulator/tma_copy.h"
#include "src/target/device_info.h"

namespace cutune::emu {

namespace fs = std::filesystem;

std::string to_string(EmuStatus status) {
  switch (status) {
    case EmuStatus::ok:
      return "ok";
    case EmuStatus::compile_error:
      return "compile_error";
    case EmuStatus::out_of_bounds:
      return "out_of_bounds";
    case EmuStatus::barrier_divergence:
      return "barrier_divergence";
    case EmuStatus::crashed:
      return "crashed";
    case EmuStatus::timeout:
      return "timeout";
    case EmuStatus::race:
      return "race";
    case EmuStatus::shared_out_of_bounds:
      return "shared_out_of_bounds";
    case EmuStatus::uninitialized_read:
      return "uninitialized_read";
  }
  return "?";
}

Emulator::Emulator(EmulatorOptions options) : options_(std::move(options)) {
  if (options_.host_threads <= 0) {
    options_.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (options_.work_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "cutune-emu-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "emulator: cannot make a work dir");
    }
    work_dir_ = pattern;
    owns_work_dir_ = true;
    register_temp_dir(work_dir_);
  } else {
    work_dir_ = options_.work_dir;
    fs::create_directories(work_dir_);
  }
}

Emulator::~Emulator() {
  if (owns_work_dir_) {
    unregister_temp_dir(work_dir_);
    std::error_code ignored;
    fs::remove_all(work_dir_, ignored);
  }
}

namespace {

// Builds the TensorMapRecord of `desc` into `out` (128 bytes); "" or why it cannot be built.
std::string tensor_map_record(const CudaSource& src, const ir::TensorMapDesc& desc,
                              const GuardedBuffers& guarded, unsigned char* out) {
  size_t index = 0;
  for (const KernelParam& p : src.params) {
    if (!p.is_pointer) continue;
    if (p.name == desc.buffer) {
      if (p.type.dtype != desc.dtype) {
        return fmt::format("tensor map over '{}' has element type {} but the buffer {}",
                           desc.buffer, ir::dtype_name(desc.dtype), ir::dtype_name(p.type.dtype));
      }
      std::string error = ir::tensor_map_error(desc, p.elements);
      if (!error.empty()) return error;
      cutune_emu_abi::TensorMapRecord r = make_tensor_map_record(
          guarded.data(index), static_cast<unsigned>(desc.element_bytes()),
          static_cast<unsigned long long>(desc.dims[0]),
          static_cast<unsigned long long>(desc.dims[1]),
          static_cast<unsigned long long>(desc.row_stride_bytes),
          static_cast<unsigned>(desc.box[0]), static_cast<unsigned>(desc.box[1]),
          static_cast<unsigned>(desc.element_strides[1]),
          static_cast<unsigned>(desc.swizzle));
      std::memset(out, 0, 128);
      std::memcpy(out, &r, sizeof r);
      return "";
    }
    ++index;
  }
  return fmt::format("tensor map over '{}', which is not a buffer parameter", desc.buffer);
}

}  // namespace

EmuResult Emulator::run(const CudaSource& src, std::vector<HostBuffer>& buffers,
                        const std::vector<ScalarArg>& scalars) {
  EmuResult result;
  // A persistent kernel's grid: the architecture's SMs', or the one a test forces.
  LaunchSpec launch = src.launch;
  if (options_.persistent_grid > 0) {
    launch = with_persistent_grid(launch, uint32_t(options_.persistent_grid));
  } else if (launch.persistent_blocks_per_sm != 0) {
    try {
      launch.grid = launch_grid(launch, target_limits(options_.arch).sm_count);
    } catch (const std::invalid_argument& e) {
      result.status = EmuStatus::crashed;
      result.message = fmt::format("{}: a persistent kernel's grid: {}", src.kernel_name, e.what());
      return result;
    }
  }
  if (launch.block.volume() == 0 || launch.block.volume() > 1024 || launch.grid.volume() == 0) {
    result.status = EmuStatus::crashed;
    result.message = fmt::format("{}: invalid launch: grid ({},{},{}) block ({},{},{})",
                                 src.kernel_name, launch.grid.x, launch.grid.y, launch.grid.z,
                                 launch.block.x, launch.block.y, launch.block.z);
    return result;
  }

  const bool sanitize = options_.racecheck || options_.memcheck;
  std::vector<uint64_t> checked;
  if (sanitize && !options_.sanitize_all_blocks) checked = sampled_blocks(launch.grid);
  if (const uint32_t cluster = launch.cluster_x; cluster > 1) {
    // Clusters run whole (cluster_runner.h): a sampled block brings its cluster's others.
    if (launch.grid.x % cluster != 0) {
      result.status = EmuStatus::crashed;
      result.message = fmt::format("{}: grid.x {} is not whole clusters of {}", src.kernel_name,
                                   launch.grid.x, cluster);
      return result;
    }
    std::vector<uint64_t> whole;
    for (uint64_t b : checked) {
      const uint64_t first = b - b % launch.grid.x % cluster;
      for (uint32_t i = 0; i < cluster; ++i) whole.push_back(first + i);
    }
    std::sort(whole.begin(), whole.end());
    whole.erase(std::unique(whole.begin(), whole.end()), whole.end());
    checked = std::move(whole);
  }
  // A sample of more than half the grid saves less run time than the second compile costs.
  const bool sample = !checked.empty() && checked.size() * 2 <= launch.grid.volume();
  // The plain object, when some blocks run from it, compiles alongside the instrumented one.
  const auto compile_start = std::chrono::steady_clock::now();
  std::future<CompiledObject> plain_compile;
  if (sample) {
    plain_compile = std::async(std::launch::async, [&] {
      return compile_kernel_object(src, work_dir_, options_.cxx_flags, false);
    });
  }
  CompiledObject object = compile_kernel_object(src, work_dir_, options_.cxx_flags, sanitize);
  CompiledObject plain_object;
  if (sample) plain_object = plain_compile.get();
  result.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  result.compile_cached = object.cached && (!sample || plain_object.cached);
  if (!object.ok || (sample && !plain_object.ok)) {
    result.status = EmuStatus::compile_error;
    result.message = object.ok ? plain_object.log : object.log;
    return result;
  }
  LoadedKernel kernel(object.path);
  std::optional<LoadedKernel> plain_kernel;
  if (sample) plain_kernel.emplace(plain_object.path);
  GuardedBuffers guarded(src, buffers);

  KernelLaunch run;
  run.kernel_name = src.kernel_name;
  run.launch = launch;
  run.kernel = &kernel;
  run.buffers = &guarded;
  run.host_threads = options_.host_threads;
  run.timeout_seconds = options_.timeout_seconds;
  run.poison_shared = options_.poison_shared;
  SharedLayout layout;
  if (sanitize) {
    CUTUNE_EMU_ASSERT(kernel.access_hook() != nullptr, "an instrumented object lacks its hook");
    *kernel.access_hook() = sanitizer_access_hook();
    layout = read_shared_layout(object.path, kernel.shared_arrays());
    run.sanitizer.racecheck = options_.racecheck;
    run.sanitizer.memcheck = options_.memcheck;
    run.sanitizer.strict_uninitialised = options_.strict_uninitialised;
    run.sanitizer.kernel_name = src.kernel_name;
    run.sanitizer.launch = launch;
    run.sanitizer.buffers = &guarded;
    run.sanitizer.object_base = kernel.load_address();
    run.sanitizer.layout = &layout;
    run.sanitize = true;
    if (sample) {
      run.plain_kernel = &*plain_kernel;
      run.checked_blocks = std::move(checked);
    }
  }
  size_t next_buffer = 0;
  size_t next_scalar = 0;
  // Tensor maps: the emulator's record of each description over its buffer's emulated copy.
  struct alignas(64) MapArg {
    unsigned char bytes[128];
  };
  std::vector<MapArg> maps;
  maps.reserve(src.params.size());
  for (const KernelParam& p : src.params) {
    if (p.is_pointer) {
      run.args.push_back(guarded.data(next_buffer++));
      continue;
    }
    if (p.tensor_map) {
      std::string error = tensor_map_record(src, *p.tensor_map, guarded, maps.emplace_back().bytes);
      if (!error.empty()) {
        result.status = EmuStatus::crashed;
        result.message = fmt::format("{}: {}", src.kernel_name, error);
        return result;
      }
      run.args.push_back(maps.back().bytes);
      continue;
    }
    CUTUNE_EMU_ASSERT(next_scalar < scalars.size(), "fewer scalars than scalar parameters");
    const ScalarArg& s = scalars[next_scalar++];
    CUTUNE_EMU_ASSERT(s.type == p.type, "scalar type differs from its parameter's");
    run.args.push_back(const_cast<std::byte*>(s.bits.data()));
  }
  CUTUNE_EMU_ASSERT(next_scalar == scalars.size(), "more scalars than scalar parameters");

  EmuResult ran = run_in_child_process(run);
  result.status = ran.status;
  result.message =
      sanitize ? resolve_source_lines(ran.message, object.path) : std::move(ran.message);
  result.run_seconds = ran.run_seconds;
  result.uninitialised_reads = ran.uninitialised_reads;
  if (result.status == EmuStatus::ok) guarded.copy_out(buffers);
  return result;
}

}  // namespace cutune::emu
