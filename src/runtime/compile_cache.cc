#include "src/runtime/compile_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

namespace cutune {

namespace {

constexpr int kSidecarFormat = 1;

std::string key_name(uint64_t key) { return fmt::format("{:016x}", key); }

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return bytes;
}

// Writes under a name unique to this process and call, then renames over `path`.
bool write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path temporary = path;
  temporary += fmt::format(".{}.{}.tmp", ::getpid(), counter++);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return false;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) std::filesystem::remove(temporary, error);
  return !error;
}

nlohmann::json to_json(const PtxasInfo& p) {
  return {{"registers", p.registers},
          {"spill_store_bytes", p.spill_store_bytes},
          {"spill_load_bytes", p.spill_load_bytes},
          {"shared_bytes", p.shared_bytes},
          {"stack_frame_bytes", p.stack_frame_bytes},
          {"constant_bytes", p.constant_bytes},
          {"barriers", p.barriers},
          {"parsed", p.parsed}};
}

PtxasInfo ptxas_from_json(const nlohmann::json& j) {
  PtxasInfo p;
  p.registers = j.at("registers").get<int>();
  p.spill_store_bytes = j.at("spill_store_bytes").get<int>();
  p.spill_load_bytes = j.at("spill_load_bytes").get<int>();
  p.shared_bytes = j.at("shared_bytes").get<int>();
  p.stack_frame_bytes = j.at("stack_frame_bytes").get<int>();
  p.constant_bytes = j.at("constant_bytes").get<int>();
  p.barriers = j.at("barriers").get<int>();
  p.parsed = j.at("parsed").get<bool>();
  return p;
}

}  // namespace

CompileCache::CompileCache(std::optional<std::filesystem::path> directory, size_t memory_entries)
    : directory_(std::move(directory)), memory_entries_(memory_entries) {
  if (!directory_) return;
  std::error_code error;
  std::filesystem::create_directories(*directory_, error);
  if (error || !std::filesystem::is_directory(*directory_))
    throw std::invalid_argument(fmt::format("cannot use compile cache directory '{}': {}",
                                            directory_->string(),
                                            error ? error.message() : "not a directory"));
}

std::optional<CompileResult> CompileCache::find(uint64_t key) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      CompileResult hit = it->second;
      hit.from_cache = true;
      return hit;
    }
  }
  std::optional<CompileResult> hit = read_disk(key);
  if (!hit) return std::nullopt;
  {
    std::lock_guard lock(mutex_);
    remember(key, *hit);
  }
  hit->from_cache = true;
  return hit;
}

void CompileCache::insert(uint64_t key, const CompileResult& result) {
  {
    std::lock_guard lock(mutex_);
    remember(key, result);
  }
  write_disk(key, result);
}

size_t CompileCache::memory_size() const {
  std::lock_guard lock(mutex_);
  return memory_.size();
}

void CompileCache::remember(uint64_t key, const CompileResult& result) {
  if (memory_entries_ == 0) return;
  auto [it, inserted] = memory_.insert_or_assign(key, result);
  it->second.from_cache = false;
  if (!inserted) return;
  order_.push_back(key);
  while (memory_.size() > memory_entries_) {
    memory_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<CompileResult> CompileCache::read_disk(uint64_t key) const {
  if (!directory_) return std::nullopt;
  const std::string name = key_name(key);
  std::optional<std::string> sidecar = read_file(*directory_ / (name + ".json"));
  if (!sidecar) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(*sidecar);
    if (j.at("format").get<int>() != kSidecarFormat) return std::nullopt;
    CompileResult result;
    result.status = j.at("status").get<std::string>() == "ok" ? CompileStatus::ok
                                                              : CompileStatus::compile_error;
    result.log = j.at("log").get<std::string>();
    result.seconds = j.at("seconds").get<double>();
    result.kernel_name = j.at("kernel_name").get<std::string>();
    result.arch = j.at("arch").get<std::string>();
    result.ptxas = ptxas_from_json(j.at("ptxas"));
    const auto cubin_bytes = j.at("cubin_bytes").get<size_t>();
    if (result.ok()) {
      std::optional<std::string> image = read_file(*directory_ / (name + ".cubin"));
      if (!image || image->size() != cubin_bytes || image->empty()) return std::nullopt;
      result.cubin.assign(image->begin(), image->end());
    }
    return result;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged sidecar is a miss; the recompile overwrites it
  }
}

void CompileCache::write_disk(uint64_t key, const CompileResult& result) const {
  if (!directory_) return;
  const std::string name = key_name(key);
  if (result.ok() &&
      !write_file_atomically(*directory_ / (name + ".cubin"),
                             std::string_view(result.cubin.data(), result.cubin.size())))
    return;
  const nlohmann::json sidecar = {
      {"format", kSidecarFormat},          {"status", result.ok() ? "ok" : "compile_error"},
      {"kernel_name", result.kernel_name}, {"arch", result.arch},
      {"seconds", result.seconds},         {"cubin_bytes", result.cubin.size()},
      {"ptxas", to_json(result.ptxas)},    {"log", result.log},
  };
  // Invalid UTF-8 in a log is replaced rather than thrown about.
  write_file_atomically(*directory_ / (name + ".json"),
                        sidecar.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace cutune
