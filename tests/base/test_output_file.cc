#include "src/base/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "src/base/errors.h"

namespace cutune {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A folder of the test's own, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "cutune-output-file-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  // The names in the folder: a temporary file left behind would show here.
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.insert(e.path().filename().string());
    return out;
  }

 private:
  fs::path path_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The one-line message of the UserError `f` throws ("" when it throws none).
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool still_fifo(const fs::path& p) { return fs::is_fifo(fs::symlink_status(p)); }

TEST_CASE("output file: a new file is written whole, with nothing left beside it") {
  TempDir dir;
  write_output_file({.path = dir / "out.json"}, "{}\n");
  CHECK(read(dir / "out.json") == "{}\n");
  CHECK(dir.names() == std::set<std::string>{"out.json"});
  check_output({.path = dir / "new.jsonl"}, OutputMode::append);
}

TEST_CASE("output file: a target in a folder that does not exist is refused") {
  TempDir dir;
  const fs::path target = dir / "no/such/out.json";
  for (OutputMode mode : {OutputMode::create, OutputMode::append})
    CHECK_THAT(refusal([&] { check_output({.path = target, .force = true}, mode); }),
               Contains("--out " + target.string() + ": no such folder"));
  CHECK_THAT(refusal([&] { write_output_file({.path = target}, "x"); }), Contains("no such folder"));
  CHECK(dir.names().empty());
}

TEST_CASE("output file: an existing regular file is replaced only with force") {
  TempDir dir;
  const fs::path target = dir / "out.json";
  put(target, "keep me");
  CHECK_THAT(refusal([&] { write_output_file({.path = target, .flag = "--out"}, "new"); }),
             Contains("--out " + target.string() + " exists; pass --force to replace it"));
  CHECK(read(target) == "keep me");
  CHECK(dir.names() == std::set<std::string>{"out.json"});
  check_output({.path = target}, OutputMode::append);  // a log that is continued

  write_output_file({.path = target, .force = true}, "new");
  CHECK(read(target) == "new");
  CHECK(dir.names() == std::set<std::string>{"out.json"});
}

TEST_CASE("output file: a FIFO is refused, even with force, and stays a FIFO") {
  TempDir dir;
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (OutputMode mode : {OutputMode::create, OutputMode::append})
    CHECK_THAT(refusal([&] { check_output({.path = fifo, .flag = "--log"}, mode); }),
               Contains("--log " + fifo.string() + " is a FIFO, not a regular file"));
  CHECK_THAT(refusal([&] { write_output_file({.path = fifo, .force = true}, "x"); }),
             Contains("is a FIFO"));
  CHECK(still_fifo(fifo));
  CHECK(dir.names() == std::set<std::string>{"pipe"});
}

TEST_CASE("output file: a directory is refused, even with force") {
  TempDir dir;
  fs::create_directory(dir / "sub");
  for (OutputMode mode : {OutputMode::create, OutputMode::append})
    CHECK_THAT(refusal([&] { check_output({.path = dir / "sub", .force = true}, mode); }),
               Contains("is a directory; name a file"));
  CHECK(fs::is_directory(dir / "sub"));
  CHECK(dir.names() == std::set<std::string>{"sub"});
}

TEST_CASE("output file: a device such as /dev/null is refused and left a device") {
  if (!fs::is_character_file("/dev/null")) {
    WARN("skipped: /dev/null is not a character device here");
    return;
  }
  for (OutputMode mode : {OutputMode::create, OutputMode::append})
    CHECK_THAT(refusal([&] { check_output({.path = "/dev/null", .force = true}, mode); }),
               Contains("/dev/null is a character device, not a regular file"));
  CHECK_THAT(refusal([&] { write_output_file({.path = "/dev/null", .force = true}, "x"); }),
             Contains("character device"));
  CHECK(fs::is_character_file(fs::symlink_status("/dev/null")));
}

TEST_CASE("output file: a symbolic link is never followed") {
  TempDir dir;
  const fs::path file = dir / "real.json", link = dir / "link.json";
  put(file, "keep me");
  fs::create_symlink(file, link);
  SECTION("refused, naming where it points, without force") {
    CHECK_THAT(refusal([&] { write_output_file({.path = link}, "new"); }),
               Contains("--out " + link.string() + " is a symbolic link to " + file.string()) &&
                   Contains("--force"));
    CHECK(fs::is_symlink(link));
  }
  SECTION("with force the link itself is replaced; what it pointed to is left alone") {
    write_output_file({.path = link, .force = true}, "new");
    CHECK_FALSE(fs::is_symlink(link));
    CHECK(read(link) == "new");
  }
  SECTION("appended to: refused, even with force") {
    CHECK_THAT(refusal([&] { check_output({.path = link, .force = true}, OutputMode::append); }),
               Contains("is a symbolic link to " + file.string() + "; name the file itself"));
  }
  SECTION("a link to a FIFO: the FIFO is never opened") {
    const fs::path fifo = dir / "pipe", to_fifo = dir / "to_pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    fs::create_symlink(fifo, to_fifo);
    CHECK_THAT(refusal([&] { write_output_file({.path = to_fifo}, "x"); }),
               Contains("is a symbolic link to " + fifo.string()));
    CHECK(still_fifo(fifo));
  }
  CHECK(read(file) == "keep me");
}

TEST_CASE("output file: the temporary file is removed when the output is not committed") {
  TempDir dir;
  const fs::path target = dir / "out.json";
  {
    AtomicOutput out({.path = target});
    out.write("half");
    CHECK(fs::is_regular_file(out.temp_path()));
    CHECK(out.temp_path().parent_path() == target.parent_path());
  }
  CHECK(dir.names().empty());
}

TEST_CASE("output file: a target that became a FIFO while written is not replaced") {
  TempDir dir;
  const fs::path target = dir / "out.json";
  {
    AtomicOutput out({.path = target, .force = true});
    out.write("contents");
    REQUIRE(::mkfifo(target.c_str(), 0644) == 0);
    CHECK_THAT(refusal([&] { out.commit(); }), Contains("is a FIFO"));
  }
  CHECK(still_fifo(target));
  CHECK(dir.names() == std::set<std::string>{"out.json"});
}

TEST_CASE("output file: two outputs to one folder use different temporary files") {
  TempDir dir;
  AtomicOutput a({.path = dir / "a"}), b({.path = dir / "a"});
  CHECK(a.temp_path() != b.temp_path());
  a.write("a");
  b.write("b");
  a.commit();
  CHECK_THAT(refusal([&] { b.commit(); }), Contains("exists; pass --force"));
  CHECK(read(dir / "a") == "a");
}

}  // namespace
}  // namespace cutune
