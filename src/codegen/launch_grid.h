#pragma once
// The grid a kernel is launched with, the one rule every launcher applies (the GPU worker with
// its device's SM count, the emulator with its architecture's, `cutune export`'s loader with
// the user's GPU, which repeats these lines since it includes nothing of cutune): the block
// loops' extents, except that a persistent kernel (LaunchSpec::persistent_blocks_per_sm > 0)
// takes at most as many blocks as the device holds at once, SMs x blocks per SM, so that every
// block stays resident and walks its share of the tiles (for tile = blockIdx.x; tile < tiles;
// tile += gridDim.x). Such a kernel is correct for any grid.x from 1 to its extent. A kernel
// of thread-block clusters (LaunchSpec::cluster_x > 1, compiled in as __cluster_dims__) takes
// whole clusters: its extent is a multiple of the cluster, and a persistent grid is rounded
// down to one (a cluster's blocks walk their tiles together).

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "src/codegen/cuda_source.h"

namespace cutune {

// `launch`'s grid on a device of `sm_count` SMs. Throws std::invalid_argument for a
// persistent kernel and sm_count < 1.
inline Dim3 launch_grid(const LaunchSpec& launch, int sm_count) {
  if (launch.persistent_blocks_per_sm == 0) return launch.grid;
  if (sm_count < 1) {
    throw std::invalid_argument("a persistent kernel's grid needs the device's SM count, got " +
                                std::to_string(sm_count));
  }
  Dim3 grid = launch.grid;
  const uint64_t resident = uint64_t(sm_count) * launch.persistent_blocks_per_sm;
  grid.x = uint32_t(std::min<uint64_t>(grid.x, resident));
  const uint32_t cluster = std::max<uint32_t>(launch.cluster_x, 1);
  grid.x = std::max(grid.x / cluster, 1u) * cluster;
  return grid;
}

// `launch` with its grid forced to `blocks` blocks along x (1 to the kernel's extent), for the
// emulator's tests of small persistent grids; a kernel that is not persistent is unchanged.
inline LaunchSpec with_persistent_grid(LaunchSpec launch, uint32_t blocks) {
  if (launch.persistent_blocks_per_sm != 0) {
    const uint32_t cluster = std::max<uint32_t>(launch.cluster_x, 1);
    launch.grid.x =
        std::max(std::clamp<uint32_t>(blocks, 1, launch.grid.x) / cluster, 1u) * cluster;
  }
  return launch;
}

// A run-time-M kernel's blocks along its M axis for M = m (LaunchSpec::m_rows): ceil(m / rows)
// tiles of rows, m_row_blocks blocks each. The worker, the emulator and the export loader
// (which repeats it) launch by this rule. Throws std::invalid_argument for m < 1 or a kernel
// without a run-time M.
inline uint32_t m_grid_extent(const LaunchSpec& launch, int64_t m) {
  if (launch.m_rows == 0 || m < 1) {
    throw std::invalid_argument("M = " + std::to_string(m) + " for a kernel " +
                                (launch.m_rows == 0 ? "whose M is fixed" : "(M >= 1)"));
  }
  return uint32_t((uint64_t(m) + launch.m_rows - 1) / launch.m_rows * launch.m_row_blocks);
}

// `source` (a run-time-M kernel lowered at some M) made concrete for M = m: the grid along its
// M axis, the elements of the buffers that follow M, and the outer dimension of their tensor
// maps. The kernel's code is the same for every M; its scalar M is the launcher's to pass.
inline CudaSource at_m(CudaSource source, int64_t m) {
  const uint32_t blocks = m_grid_extent(source.launch, m);
  (source.launch.m_axis == 0 ? source.launch.grid.x : source.launch.grid.y) = blocks;
  for (KernelParam& p : source.params) {
    if (p.m_row_elements == 0) continue;
    if (p.tensor_map) {
      p.tensor_map->dims[1] = m;
    } else {
      p.elements = m * p.m_row_elements;
    }
  }
  return source;
}

}  // namespace cutune
