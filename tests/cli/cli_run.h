#pragma once
// Runs the built `cutune` binary with arguments (a shell command line fragment) and captures
// its stdout, stderr and exit status.

#include <sys/wait.h>

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

// `cwd`: the folder to run in (default: the test's own).
inline CliRun run_cutune(const std::string& args, const std::filesystem::path& cwd = {}) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {  // holds the captured output
    std::string templ = (fs::temp_directory_path() / "cutune-cli-test-XXXXXX").string();
    return fs::path(mkdtemp(templ.data()));
  }();
  CliRun r;
  r.command = std::string(CUTUNE_BINARY_DIR) + "/src/cli/cutune " + args;
  const fs::path out = dir / "stdout", err = dir / "stderr";
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
