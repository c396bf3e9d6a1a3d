#pragma once
// The plain value that code generation hands to the compiler, the emulator and the runtime:
// a CUDA C translation unit with one __global__ kernel and the launch description that the
// kernel was generated for. Generated kernels are self-contained and extern "C"; a user's may
// include headers from its compile_options' include paths and have C++ linkage.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/ir/tensor_map.h"
#include "src/ir/type.h"

namespace cutune {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  constexpr uint64_t volume() const { return uint64_t{x} * y * z; }
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

// One kernel parameter, in the order the kernel takes them. A pointer parameter points at a
// global buffer of `elements` elements of `type`; a scalar parameter is passed by value.
struct KernelParam {
  std::string name;
  ir::Type type;  // element type for pointers, value type for scalars
  bool is_pointer = true;
  bool is_const = false;  // a pointer the kernel only reads
  int64_t elements = 0;   // pointers: the buffer's size in elements (for checks and allocation)
  // A TMA tensor map (is_pointer false): a `const __grid_constant__ cutune_tensor_map` built
  // by the launcher over the pointer parameter named tensor_map->buffer.
  std::optional<ir::TensorMapDesc> tensor_map = std::nullopt;
  // A kernel with a run-time M (LaunchSpec::m_rows > 0): a pointer to a buffer of this many
  // elements per row of M (A: K, C: N), or a tensor map whose outer dimension (dims[1]) is M;
  // 0: the parameter does not follow M. at_m (launch_grid.h) applies it.
  int64_t m_row_elements = 0;
};

struct LaunchSpec {
  Dim3 grid;
  Dim3 block;
  uint32_t static_smem_bytes = 0;   // __shared__ arrays declared in the kernel
  uint32_t dynamic_smem_bytes = 0;  // extern __shared__; above 48 KiB it needs the opt-in
  // A persistent kernel's (ir::Kernel::persistent_blocks_per_sm): grid.x is then the most
  // blocks it can use, and the launch takes launch_grid (launch_grid.h) of the device's SMs.
  uint32_t persistent_blocks_per_sm = 0;
  // Blocks per thread-block cluster along x (ir::Kernel::cluster_x), compiled into the kernel
  // (__cluster_dims__): grid.x, also a persistent kernel's, is a multiple of it. 1: none.
  uint32_t cluster_x = 1;
  // A kernel whose M is a run-time scalar (its parameter "M", a GEMM serving a range of M):
  // the grid along axis m_axis (0: x, 1: y) is ceil(M / m_rows) x m_row_blocks blocks, the
  // one rule launch_grid.h's at_m applies; grid holds it for the M the kernel was lowered at.
  // 0: the grid is fixed.
  uint32_t m_rows = 0, m_row_blocks = 0, m_axis = 0;
};

struct CudaSource {
  // The __global__ function: its name or a name expression ("scale<float, 128>"), which NVRTC
  // resolves to the symbol to load (a C++ kernel's is mangled).
  std::string kernel_name;
  std::string code;         // the whole translation unit; includes nothing
  std::vector<KernelParam> params;
  LaunchSpec launch;
  // The kernel uses instructions of an architecture-specific feature set (sm_90a's wgmma and
  // setmaxnreg): the builder compiles it for the "a" variant of its architecture.
  bool arch_specific = false;
  // A user kernel's NVRTC options (a spec's CompilerOptions and its folder as an include path):
  // NVRTC gets them after its own (a -std here replaces cutune's); the emulator honours the
  // defines, undefines and include paths among them.
  std::vector<std::string> compile_options;
};

}  // namespace cutune
