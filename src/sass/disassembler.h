#pragma once
// Finding NVIDIA's disassembler (nvdisasm) and running it on a cubin.
//
// The search: $CUTUNE_NVDISASM when set, then `nvdisasm` in every folder of $PATH, then the
// bin/ folder of every CUDA installation and the bin/ folders of NVIDIA's Python wheels
// (nvidia/cu13/bin, nvidia/cuda_nvdisasm/bin, ...) in every site-packages, the same places
// and order src/runtime/dynamic_library.h searches for the CUDA libraries. The toolkit on
// some machines lacks nvdisasm; cmake/install_deps.sh installs the wheel
// nvidia-cuda-nvdisasm for those.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/runtime/dynamic_library.h"

namespace cutune::sass {

// Thrown when nvdisasm is not found; what() is one line saying where it looked.
class MissingDisassemblerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The outcome of one search.
struct DisassemblerLookup {
  std::filesystem::path path;                  // empty when not found
  std::vector<std::filesystem::path> folders;  // every folder looked in, in order
  bool found() const { return !path.empty(); }
  std::string error() const;  // one line; "" when found
};

// The folders to look in for `environment` (tests build their own), in order, existing
// ones only, each once.
std::vector<std::filesystem::path> tool_folders(const SearchEnvironment& environment,
                                                const std::vector<std::filesystem::path>& path);

// Looks for `tool` (an executable file name) in `folders`, in order.
DisassemblerLookup find_tool(const std::string& tool,
                             const std::vector<std::filesystem::path>& folders);

// nvdisasm for this process, searched once (thread-safe).
const DisassemblerLookup& find_nvdisasm();

// The text `nvdisasm -c` prints for `cubin`. Throws MissingDisassemblerError when nvdisasm
// is absent and std::runtime_error (with nvdisasm's message) when it fails on the image.
std::string disassemble(const std::vector<char>& cubin);

}  // namespace cutune::sass
