#include "src/runtime/dynamic_library.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/runtime/nvrtc_program.h"

using namespace cutune;
namespace fs = std::filesystem;

namespace {

// A throw-away folder tree: a CUDA installation and a venv with NVIDIA's wheels.
struct FakeMachine {
  fs::path root;
  fs::path cuda, site;
  FakeMachine() {
    std::string templ = (fs::temp_directory_path() / "cutune-dynlib-XXXXXX").string();
    root = mkdtemp(templ.data());
    cuda = root / "cuda";
    site = root / "venv" / "lib" / "python3.12" / "site-packages";
    for (const fs::path& p : {cuda / "lib64", cuda / "extras" / "CUPTI" / "lib64",
                              site / "nvidia" / "cu13" / "lib", site / "nvidia" / "cudnn" / "lib",
                              site / "nvidia" / "cublas" / "lib", site / "nvidia" / "nccl"})
      fs::create_directories(p);
  }
  ~FakeMachine() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  SearchEnvironment environment() const {
    SearchEnvironment env;
    env.cuda_homes = {cuda.string(), (root / "absent").string()};
    env.site_packages = {site};
    return env;
  }
};

bool contains(const std::vector<fs::path>& list, const fs::path& p) {
  return std::find(list.begin(), list.end(), fs::canonical(p)) != list.end();
}

}  // namespace

TEST_CASE("the search list holds the toolkit folders, then every wheel's lib folder", "[dynlib]") {
  FakeMachine m;
  const std::vector<fs::path> folders = library_folders(m.environment());
  const std::vector<fs::path> expected = {
      m.cuda / "lib64", m.cuda / "extras" / "CUPTI" / "lib64", m.site / "nvidia" / "cu13" / "lib",
      m.site / "nvidia" / "cublas" / "lib", m.site / "nvidia" / "cudnn" / "lib"};
  REQUIRE(folders.size() == expected.size());  // nccl has no lib/, absent homes are skipped
  for (size_t i = 0; i < expected.size(); ++i) CHECK(folders[i] == fs::canonical(expected[i]));
}

TEST_CASE("a library in a wheel folder is found by its full path, a miss lists every place",
          "[dynlib]") {
  FakeMachine m;
  const fs::path copy = m.site / "nvidia" / "cudnn" / "lib" / "libcutune_fake.so.9";
  fs::copy_file(CUTUNE_FAKE_LIBRARY, copy);
  const std::vector<fs::path> folders = library_folders(m.environment());

  const LibraryLookup found =
      find_library({"libcutune_fake.so.10", "libcutune_fake.so.9"}, folders);
  REQUIRE(found.found());
  CHECK(found.path == fs::canonical(copy).string());
  CHECK(found.error().empty());
  auto version = reinterpret_cast<int (*)()>(dlsym(found.handle, "cutune_fake_library_version"));
  REQUIRE(version != nullptr);
  CHECK(version() == 42);
  // The two default-search misses, then the four folders before cudnn/lib, each as one line.
  CHECK(found.tried.size() == 2 + 4);

  const LibraryLookup missing = find_library({"libcutune_absent.so.1"}, folders);
  CHECK_FALSE(missing.found());
  CHECK(missing.path.empty());
  REQUIRE(missing.tried.size() == 1 + folders.size());
  CHECK_THAT(missing.tried[0], Catch::Contains("libcutune_absent.so.1"));
  for (size_t i = 0; i < folders.size(); ++i)
    CHECK_THAT(missing.tried[i + 1], Catch::StartsWith(folders[i].string()));
  const std::string error = missing.error();
  CHECK_THAT(error, Catch::Contains("tried 6 places"));
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("a file that is there but does not load is reported with the linker's reason",
          "[dynlib]") {
  FakeMachine m;
  const fs::path bogus = m.cuda / "lib64" / "libcutune_bogus.so.1";
  { std::ofstream(bogus) << "not an ELF file"; }
  const LibraryLookup r = find_library({"libcutune_bogus.so.1"}, library_folders(m.environment()));
  CHECK_FALSE(r.found());
  REQUIRE(r.tried.size() >= 2);
  CHECK_THAT(r.tried[1], Catch::StartsWith(bogus.string()));
  CHECK_THAT(r.tried[1], !Catch::Contains("no libcutune_bogus"));
}

TEST_CASE("site-packages of an activated venv are found without running Python", "[dynlib]") {
  FakeMachine m;
  const char* old = getenv("VIRTUAL_ENV");
  const std::string saved = old ? old : "";
  setenv("VIRTUAL_ENV", (m.root / "venv").c_str(), 1);
  const std::vector<fs::path> sites = python_site_packages();
  if (old)
    setenv("VIRTUAL_ENV", saved.c_str(), 1);
  else
    unsetenv("VIRTUAL_ENV");
  REQUIRE_FALSE(sites.empty());
  CHECK(sites.front() == fs::canonical(m.site));
  CHECK(contains(sites, m.site));
}

TEST_CASE("every CUDA library is either found at an existing path or explains the miss",
          "[dynlib]") {
  for (CudaLibrary library : kCudaLibraries) {
    INFO(library_display_name(library));
    const LibraryLookup& r = load_cuda_library(library);
    CHECK(&r == &load_cuda_library(library));  // once per process
    CHECK_FALSE(library_file_names(library).empty());
    if (r.found()) {
      CHECK(fs::exists(r.path));
    } else {
      CHECK_FALSE(r.tried.empty());
      CHECK(r.error().find('\n') == std::string::npos);
      std::string error;
      CHECK(open_cuda_library(library, &error) == nullptr);
      CHECK_THAT(error, Catch::StartsWith("cannot load " + library_file_names(library).front()));
    }
  }
}

TEST_CASE("NVRTC is used through its table when it loads, and named when it does not", "[dynlib]") {
  if (load_cuda_library(CudaLibrary::nvrtc).found()) {
    REQUIRE(nvrtc_api() != nullptr);
    CHECK(nvrtc_unavailable_reason().empty());
    CHECK(nvrtc().nvrtcCompileProgram != nullptr);
    CHECK_FALSE(nvrtc_version_string().empty());
  } else {
    CHECK(nvrtc_api() == nullptr);
    CHECK_THROWS_AS(nvrtc(), MissingLibraryError);
    CHECK_THROWS_WITH(nvrtc(), Catch::StartsWith("NVRTC is missing: cannot load libnvrtc"));
  }
}
