#pragma once
// Runs the built `cutune` binary with arguments (a shell command line fragment) and captures
// its stdout, stderr and exit status.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cutune::test {

struct CliRun {
  int status = -1;
  std::string out, err;
  std::string command;
  // The number of lines of stderr (a trailing newline ends the last line).
  int err_lines() const {
    int n = 0;
    for (char c : err) n += c == '\n';
    return n + (!err.empty() && err.back() != '\n');
  }
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A folder of this process's own (mkdtemp), removed when the process exits (also by
// std::exit, as a skipped test case does), so that test processes running side by side under
// ctest -j neither share nor leave one. A forked child that exits leaves it to its parent.
class ProcessTempDir {
 public:
  explicit ProcessTempDir(const std::string& prefix) : owner_(getpid()) {
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path_ = mkdtemp(templ.data());
  }
  ~ProcessTempDir() {
    if (getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  pid_t owner_;
  std::filesystem::path path_;
};

// `cwd`: the folder to run in (default: the test's own).
inline CliRun run_cutune(const std::string& args, const std::filesystem::path& cwd = {}) {
  namespace fs = std::filesystem;
  static const ProcessTempDir dir("cutune-cli-test");  // holds the captured output
  CliRun r;
  r.command = std::string(CUTUNE_BINARY_DIR) + "/src/cli/cutune " + args;
  const fs::path out = dir.path() / "stdout", err = dir.path() / "stderr";
  std::string shell = (cwd.empty() ? "" : "cd '" + cwd.string() + "' && ") + r.command + " >" +
                      out.string() + " 2>" + err.string() + " </dev/null";
  int raw = std::system(shell.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace cutune::test

// What a run printed, for failure messages.
#define INFO_RUN(r)                                                    \
  INFO("$ " << (r).command << "\nexit " << (r).status << "\nstdout:\n" \
            << (r).out << "stderr:\n"                                  \
            << (r).err)

// A run that failed as a user error: exit `code`, one line on stderr that starts "cutune: " and
// says `needle`.
#define CHECK_ONE_LINE_ERROR(run, code, needle)        \
  do {                                                 \
    const ::cutune::test::CliRun& r_ = (run);         \
    INFO_RUN(r_);                                      \
    CHECK(r_.status == (code));                        \
    CHECK(r_.err_lines() == 1);                        \
    CHECK_THAT(r_.err, Catch::StartsWith("cutune: ")); \
    CHECK_THAT(r_.err, Catch::Contains(needle));       \
  } while (0)
