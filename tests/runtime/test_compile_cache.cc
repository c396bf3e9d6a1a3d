#include "src/runtime/compile_cache.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "src/runtime/nvrtc_builder.h"
#include "tests/runtime/test_kernels.h"

using namespace cutune;

namespace {

// A fresh directory under the system's temporary folder, removed on scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("cutune-test-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("FNV-1a 64 matches the reference values and separates fields", "[cache]") {
  // Reference: FNV-1a 64 of "" is the offset basis, of "a" is af63dc4c8601ec8c.
  auto raw = [](std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  CHECK(raw("a") == 0xaf63dc4c8601ec8cull);
  CHECK(Fnv1a64().add("ab").add("c").value() != Fnv1a64().add("a").add("bc").value());
  CHECK(Fnv1a64().add("x").value() == Fnv1a64().add("x").value());
}

TEST_CASE("second compile is a cache hit with identical bytes, another arch misses", "[cache]") {
  NvrtcBuilder builder(BuildOptions{});
  const CompileResult first = builder.compile(test::axpy_source());
  REQUIRE(first.ok());
  CHECK_FALSE(first.from_cache);
  const CompileResult second = builder.compile(test::axpy_source());
  CHECK(second.from_cache);
  CHECK(second.cubin == first.cubin);
  CHECK(second.ptxas == first.ptxas);
  CHECK(second.log == first.log);

  BuildOptions other;
  other.arch = "sm_80";
  NvrtcBuilder other_builder(other);
  CHECK(other_builder.cache_key(test::axpy_source()) != builder.cache_key(test::axpy_source()));
  const CompileResult sm80 = other_builder.compile(test::axpy_source());
  CHECK(sm80.ok());
  CHECK_FALSE(sm80.from_cache);
  CHECK(sm80.arch == "sm_80");
}

TEST_CASE("the on-disk cache serves a new builder in the same directory", "[cache]") {
  TempDir dir("disk");
  std::vector<char> image;
  {
    NvrtcBuilder builder(BuildOptions{}, 1, dir.path());
    const CompileResult fresh = builder.compile(test::axpy_source());
    REQUIRE(fresh.ok());
    CHECK_FALSE(fresh.from_cache);
    CHECK_FALSE(builder.compile(test::syntax_error_source()).from_cache);
    image = fresh.cubin;
  }
  NvrtcBuilder builder(BuildOptions{}, 1, dir.path());
  const CompileResult hit = builder.compile(test::axpy_source());
  CHECK(hit.from_cache);
  CHECK(hit.ok());
  CHECK(hit.cubin == image);
  CHECK(hit.ptxas.parsed);
  CHECK(hit.kernel_name == "axpy");
  const CompileResult error_hit = builder.compile(test::syntax_error_source());
  CHECK(error_hit.from_cache);
  CHECK(error_hit.status == CompileStatus::compile_error);
  CHECK(error_hit.log.find("expected an expression") != std::string::npos);
}

TEST_CASE("a damaged disk entry is a miss, then rewritten", "[cache]") {
  TempDir dir("damaged");
  uint64_t key = 0;
  {
    NvrtcBuilder builder(BuildOptions{}, 1, dir.path());
    key = builder.cache_key(test::axpy_source());
    REQUIRE(builder.compile(test::axpy_source()).ok());
  }
  const auto sidecar = dir.path() / fmt::format("{:016x}.json", key);
  REQUIRE(std::filesystem::exists(sidecar));
  std::ofstream(sidecar, std::ios::trunc) << "{ not json";

  NvrtcBuilder builder(BuildOptions{}, 1, dir.path());
  const CompileResult again = builder.compile(test::axpy_source());
  CHECK(again.ok());
  CHECK_FALSE(again.from_cache);

  CompileCache reader(dir.path());
  const std::optional<CompileResult> hit = reader.find(key);
  REQUIRE(hit.has_value());
  CHECK(hit->cubin == again.cubin);
}

TEST_CASE("the memory layer drops its oldest entries past capacity", "[cache]") {
  CompileCache cache(std::nullopt, 2);
  CompileResult result;
  result.status = CompileStatus::compile_error;
  result.log = "x";
  cache.insert(1, result);
  cache.insert(2, result);
  cache.insert(3, result);
  CHECK(cache.memory_size() == 2);
  CHECK_FALSE(cache.find(1).has_value());
  REQUIRE(cache.find(3).has_value());
  CHECK(cache.find(3)->from_cache);
}

TEST_CASE("a cache directory that cannot be created is a user error", "[cache]") {
  TempDir dir("blocked");
  std::filesystem::create_directories(dir.path());
  const auto file = dir.path() / "plain-file";
  std::ofstream(file) << "x";
  CHECK_THROWS_AS(CompileCache(file / "sub"), std::invalid_argument);
  CHECK_THROWS_AS(CompileCache(file), std::invalid_argument);
}
