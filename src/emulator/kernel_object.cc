#include "src/emulator/kernel_object.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "src/base/hash.h"
#include "src/emulator/postlude.h"
#include "src/emulator/prelude_text.h"

extern char** environ;

namespace cutune::emu {

namespace {

namespace fs = std::filesystem;

// -fno-strict-aliasing: generated code reads float arrays through float4 lvalues.
// -fno-math-errno: lets sqrtf and friends become single instructions; results are the same.
// -fstack-clash-protection: a frame larger than a page (big local arrays) still touches the
// guard page below its fiber's stack instead of jumping over it into another fiber's.
// The sanitizer's instrumentation (sanitizer.h): kernel-address makes every load and store a
// call to the prelude's __asan_*_noabort, which needs no run-time library; stack and global
// red zones stay off (the emulator places its own around shared arrays, and the guard pages
// around global buffers; the prelude keeps them in declaration order); -g1 gives the line tables
// that turn an access's return address into a kernel source line.
const std::vector<std::string> kSanitizeFlags = {"-DCUTUNE_EMU_SANITIZE",
                                                 "-fsanitize=kernel-address",
                                                 "--param",
                                                 "asan-instrumentation-with-call-threshold=0",
                                                 "--param",
                                                 "asan-stack=0",
                                                 "--param",
                                                 "asan-globals=0",
                                                 "-g1"};

const std::vector<std::string> kBaseFlags = {"-std=c++17",
                                             "-O2",
                                             "-fPIC",
                                             "-shared",
                                             "-w",
                                             "-fno-strict-aliasing",
                                             "-fno-math-errno",
                                             "-fno-exceptions",
                                             "-fvisibility=hidden",
                                             "-fstack-clash-protection"};

// FNV-1a over `s`, then a separator between consecutive fields.
uint64_t hash_field(uint64_t h, std::string_view s) { return fnv1a(s, h) ^ 0xff; }

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.{}", getpid(), counter.fetch_add(1));
}

// Writes by rename so that a reader sharing the directory never sees half a file.
void write_file_atomically(const fs::path& path, std::string_view text) {
  fs::path tmp = path;
  tmp += ".tmp." + unique_suffix();
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!f) throw std::runtime_error(fmt::format("emulator: cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `argv` with stdout and stderr going to `log`; returns its exit status (-1: not run).
int run_command(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What the host compiler takes of a user kernel's NVRTC options: defines, undefines and include
// paths (joined or separate, short or long); the rest (the -std, code generation) is NVRTC's.
std::vector<std::string> host_flags(const std::vector<std::string>& nvrtc_options) {
  static constexpr std::pair<const char*, const char*> kKept[] = {
      {"--define-macro=", "-D"}, {"--undefine-macro=", "-U"}, {"--include-path=", "-I"},
      {"-D", "-D"}, {"-U", "-U"}, {"-I", "-I"}};
  std::vector<std::string> out;
  for (size_t i = 0; i < nvrtc_options.size(); ++i) {
    const std::string& o = nvrtc_options[i];
    for (const auto& [prefix, host] : kKept) {
      if (!o.starts_with(prefix)) continue;
      std::string value = o.substr(std::string_view(prefix).size());
      if (value.empty() && i + 1 < nvrtc_options.size()) value = nvrtc_options[++i];
      out.push_back(host + value);
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> host_compiler_command() {
  std::vector<std::string> cmd;
  if (const char* env = std::getenv("CUTUNE_CXX"); env != nullptr && *env != '\0') {
    std::istringstream words(env);
    for (std::string w; words >> w;) cmd.push_back(w);
  }
  if (cmd.empty()) cmd.push_back("c++");
  return cmd;
}

CompiledObject compile_kernel_object(const CudaSource& src, const fs::path& work_dir,
                                     const std::vector<std::string>& extra_flags, bool sanitize) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CompiledObject out;

  std::string_view prelude = device_prelude_text();
  std::vector<std::string> cmd = host_compiler_command();
  cmd.insert(cmd.end(), kBaseFlags.begin(), kBaseFlags.end());
  if (sanitize) cmd.insert(cmd.end(), kSanitizeFlags.begin(), kSanitizeFlags.end());
  cmd.insert(cmd.end(), extra_flags.begin(), extra_flags.end());
  const std::vector<std::string> user = host_flags(src.compile_options);
  cmd.insert(cmd.end(), user.begin(), user.end());

  // Each compile gets its own folder, so the postlude names the kernel file the same way
  // every time and the hash covers everything the object depends on.
  Postlude postlude = make_postlude(src, "kernel.cu", sanitize);
  const std::string code = sanitize ? sanitized_kernel_source(src.code) : src.code;
  if (!postlude.error.empty()) {
    out.log = postlude.error;
    out.seconds = elapsed();
    return out;
  }
  uint64_t h = hash_field(1469598103934665603ull, prelude);
  h = hash_field(h, code);
  h = hash_field(h, postlude.text);
  for (const std::string& c : cmd) h = hash_field(h, c);
  std::string stem = fmt::format("k{:016x}", h);

  out.path = work_dir / (stem + ".so");
  if (fs::exists(out.path)) {
    out.ok = true;
    out.cached = true;
    out.seconds = elapsed();
    return out;
  }

  fs::path dir = work_dir / stem;
  fs::create_directories(dir);
  fs::path prelude_path = dir / "prelude.h";
  fs::path main_path = dir / "main.cc";
  write_file_atomically(prelude_path, prelude);
  write_file_atomically(dir / "kernel.cu", code);
  write_file_atomically(main_path, postlude.text);

  fs::path tmp_object = out.path;
  tmp_object += ".tmp." + unique_suffix();
  fs::path log_path = dir / ("log." + unique_suffix());
  cmd.insert(cmd.end(),
             {"-include", prelude_path.string(), main_path.string(), "-o", tmp_object.string()});
  int rc = run_command(cmd, log_path);
  out.log = read_file(log_path);
  fs::remove(log_path);
  if (rc == -1) {
    out.log = fmt::format("emulator: cannot run the host compiler `{}` (set CUTUNE_CXX)", cmd[0]);
  } else if (rc == 0) {
    fs::rename(tmp_object, out.path);
    out.ok = true;
  } else {
    std::error_code ignored;
    fs::remove(tmp_object, ignored);
    if (out.log.empty()) out.log = fmt::format("the host compiler exited with status {}", rc);
  }
  out.seconds = elapsed();
  return out;
}

LoadedKernel::LoadedKernel(const fs::path& object) {
  handle_ = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    throw std::runtime_error(
        fmt::format("emulator: cannot load {}: {}", object.string(), dlerror()));
  }
  thread_main_ = reinterpret_cast<cutune_emu_abi::ThreadMain>(
      dlsym(handle_, cutune_emu_abi::kThreadMainSymbol));
  tls_touch_ =
      reinterpret_cast<cutune_emu_abi::TlsTouch>(dlsym(handle_, cutune_emu_abi::kTlsTouchSymbol));
  access_hook_ = reinterpret_cast<cutune_emu_abi::AccessHook*>(
      dlsym(handle_, cutune_emu_abi::kAccessHookSymbol));
  shared_arrays_ = reinterpret_cast<const cutune_emu_abi::SharedArrayInfo*>(
      dlsym(handle_, cutune_emu_abi::kSharedArraysSymbol));
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(thread_main_), &info) != 0) {
    load_address_ = reinterpret_cast<uintptr_t>(info.dli_fbase);
  }
  if (thread_main_ == nullptr || tls_touch_ == nullptr) {
    dlclose(handle_);
    throw std::runtime_error(
        fmt::format("emulator: {} lacks the emulator's entry points", object.string()));
  }
}

LoadedKernel::~LoadedKernel() { dlclose(handle_); }

}  // namespace cutune::emu
