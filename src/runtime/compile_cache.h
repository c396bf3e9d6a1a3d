#pragma once
// Remembers compile results by a 64-bit key of everything that decides NVRTC's output
// (source, kernel name, options, NVRTC version; see NvrtcBuilder). Always in memory; with a
// directory, also on disk as <key>.cubin plus a <key>.json sidecar (status, log, ptxas
// report, compile seconds), so results survive across runs and processes.
//
// Thread-safe. The disk layer is best effort: an entry that cannot be written or read back
// intact is a miss, never an error. Files are written under a temporary name and renamed,
// and the sidecar goes last, so a reader never sees half an entry.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "src/base/hash.h"
#include "src/runtime/compile_result.h"

namespace cutune {

class CompileCache {
 public:
  static constexpr size_t kDefaultMemoryEntries = 4096;

  // Creates `directory` if needed; throws std::invalid_argument (one line) when it cannot.
  // The memory layer keeps at most `memory_entries` results, dropping the oldest first.
  explicit CompileCache(std::optional<std::filesystem::path> directory = std::nullopt,
                        size_t memory_entries = kDefaultMemoryEntries);

  // A copy of the stored result with from_cache = true, or nullopt.
  std::optional<CompileResult> find(uint64_t key);
  void insert(uint64_t key, const CompileResult& result);

  size_t memory_size() const;
  const std::optional<std::filesystem::path>& directory() const { return directory_; }

 private:
  void remember(uint64_t key, const CompileResult& result);  // mutex_ held
  std::optional<CompileResult> read_disk(uint64_t key) const;
  void write_disk(uint64_t key, const CompileResult& result) const;

  std::optional<std::filesystem::path> directory_;
  size_t memory_entries_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, CompileResult> memory_;
  std::deque<uint64_t> order_;
};

}  // namespace cutune
