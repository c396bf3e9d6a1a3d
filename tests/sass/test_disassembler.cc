// Finding nvdisasm: the search order over PATH, CUDA installations and Python wheels, on fake
// folders made for the test.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "src/sass/disassembler.h"

using namespace cutune;
using namespace cutune::sass;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/cutune-test-sass-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void make_executable(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "#!/bin/sh\n";
  fs::permissions(file, fs::perms::owner_all);
}

}  // namespace

TEST_CASE("nvdisasm is found in a CUDA 13 wheel's nvidia/cu13/bin") {
  TempDir t;
  const fs::path site = t.path / "lib/python3.11/site-packages";
  make_executable(site / "nvidia/cu13/bin/nvdisasm");
  SearchEnvironment env;
  env.roots = {t.path / "cuda"};  // absent: skipped
  env.site_packages = {site};
  std::vector<fs::path> folders = tool_folders(env, {});
  REQUIRE(folders.size() == 1);
  DisassemblerLookup found = find_tool("nvdisasm", folders);
  REQUIRE(found.found());
  CHECK(found.path.filename() == "nvdisasm");
  CHECK(found.error().empty());
}

TEST_CASE("the toolkit's bin comes before the wheels, PATH before both") {
  TempDir t;
  make_executable(t.path / "cuda/bin/nvdisasm");
  make_executable(t.path / "site/nvidia/cuda_nvdisasm/bin/nvdisasm");
  make_executable(t.path / "path/nvdisasm");
  SearchEnvironment env;
  env.roots = {t.path / "cuda"};
  env.site_packages = {t.path / "site"};
  std::vector<fs::path> without_path = tool_folders(env, {});
  REQUIRE(without_path.size() == 2);
  CHECK(find_tool("nvdisasm", without_path).path.parent_path().parent_path().filename() == "cuda");
  std::vector<fs::path> with_path = tool_folders(env, {t.path / "path"});
  CHECK(find_tool("nvdisasm", with_path).path.parent_path().filename() == "path");
}

TEST_CASE("a missing nvdisasm is one line naming every folder looked in") {
  TempDir t;
  fs::create_directories(t.path / "cuda/bin");
  std::ofstream(t.path / "cuda/bin/nvdisasm") << "not executable";
  SearchEnvironment env;
  env.roots = {t.path / "cuda"};
  DisassemblerLookup lookup = find_tool("nvdisasm", tool_folders(env, {}));
  CHECK_FALSE(lookup.found());
  const std::string e = lookup.error();
  CHECK(e.find('\n') == std::string::npos);
  CHECK(e.find("install_deps.sh") != std::string::npos);
  CHECK(e.find((t.path / "cuda/bin").string()) != std::string::npos);
}
