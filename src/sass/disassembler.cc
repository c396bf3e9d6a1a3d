#include "src/sass/disassembler.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sys/wait.h>

namespace cutune::sass {

namespace fs = std::filesystem;

namespace {

void add_folder(std::vector<fs::path>& list, const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return;
  fs::path normal = fs::canonical(p, ec);
  if (ec) normal = p.lexically_normal();
  if (std::find(list.begin(), list.end(), normal) == list.end()) list.push_back(normal);
}

std::vector<fs::path> path_folders() {
  std::vector<fs::path> out;
  const char* v = std::getenv("PATH");
  const std::string path = v ? v : "";
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find(':', start), path.size());
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Runs `command` through the shell, returning its stdout and exit status.
std::pair<std::string, int> run_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string text;
  std::array<char, 1 << 16> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) text.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {std::move(text), WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string DisassemblerLookup::error() const {
  if (found()) return "";
  std::string where;
  for (const fs::path& f : folders) where += (where.empty() ? "" : ", ") + f.string();
  return "nvdisasm not found (set CUTUNE_NVDISASM, or run cmake/install_deps.sh to install "
         "the nvidia-cuda-nvdisasm wheel); looked in " +
         std::to_string(folders.size()) + " folders: " + where;
}

std::vector<fs::path> tool_folders(const SearchEnvironment& environment,
                                   const std::vector<fs::path>& path) {
  std::vector<fs::path> folders;
  for (const fs::path& p : path) add_folder(folders, p);
  std::vector<fs::path> roots(environment.cuda_homes.begin(), environment.cuda_homes.end());
  roots.insert(roots.end(), environment.roots.begin(), environment.roots.end());
  for (const fs::path& root : roots) add_folder(folders, root / "bin");
  for (const fs::path& site : environment.site_packages) {
    add_folder(folders, site / "nvidia" / "cu13" / "bin");
    std::error_code ec;
    std::vector<fs::path> packages;
    for (fs::directory_iterator it(site / "nvidia", ec), end; !ec && it != end; it.increment(ec))
      packages.push_back(it->path());
    std::sort(packages.begin(), packages.end());
    for (const fs::path& package : packages) add_folder(folders, package / "bin");
  }
  return folders;
}

DisassemblerLookup find_tool(const std::string& tool, const std::vector<fs::path>& folders) {
  DisassemblerLookup lookup;
  lookup.folders = folders;
  for (const fs::path& folder : folders) {
    const fs::path candidate = folder / tool;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) {
      lookup.path = candidate;
      break;
    }
  }
  return lookup;
}

const DisassemblerLookup& find_nvdisasm() {
  static DisassemblerLookup lookup;
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* forced = std::getenv("CUTUNE_NVDISASM"); forced && *forced) {
      lookup.folders = {fs::path(forced).parent_path()};
      if (access(forced, X_OK) == 0) lookup.path = forced;
      return;
    }
    std::vector<fs::path> folders = tool_folders(SearchEnvironment::from_process(), path_folders());
    lookup = find_tool("nvdisasm", folders);
    if (lookup.found()) return;
    // As for the libraries: ask the machine's Python where its packages are.
    SearchEnvironment reported;
    reported.site_packages = python_reported_site_packages();
    for (const fs::path& f : tool_folders(reported, {}))
      if (std::find(folders.begin(), folders.end(), f) == folders.end()) folders.push_back(f);
    lookup = find_tool("nvdisasm", folders);
  });
  return lookup;
}

std::string disassemble(const std::vector<char>& cubin) {
  const DisassemblerLookup& tool = find_nvdisasm();
  if (!tool.found()) throw MissingDisassemblerError(tool.error());
  char name[] = "/tmp/cutune-sass-XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for nvdisasm");
  close(fd);
  {
    std::ofstream out(name, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  }
  auto [text, status] =
      run_command(shell_quote(tool.path.string()) + " -c " + shell_quote(name) + " 2>&1");
  std::remove(name);
  if (status != 0) {
    std::string first = text.substr(0, text.find('\n'));
    throw std::runtime_error("nvdisasm failed (exit " + std::to_string(status) + "): " + first);
  }
  return text;
}

}  // namespace cutune::sass
