#include "src/report/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace cutune::report {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A private folder under $TMPDIR, removed when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "cutune-report-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr)
      throw GnuplotError(fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t^") != std::string::npos) return line;
  }
  return "";
}

}  // namespace

std::optional<fs::path> find_gnuplot() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view rest(path);
  while (true) {
    const size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    if (!dir.empty()) {
      fs::path candidate = fs::path(dir) / "gnuplot";
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

std::string run_gnuplot(const fs::path& gnuplot, const std::string& script) {
  TempDir dir;
  const fs::path script_path = dir.path() / "plot.gp";
  const fs::path out_path = dir.path() / "plot.svg";
  const fs::path err_path = dir.path() / "stderr.txt";
  {
    std::ofstream out(script_path, std::ios::binary);
    out << script;
    if (!out) throw GnuplotError("cannot write the gnuplot script to " + script_path.string());
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  std::string program = gnuplot.string(), arg = script_path.string();
  std::vector<char*> argv = {program.data(), arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw GnuplotError(fmt::format("cannot run {}: {}", program, std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw GnuplotError(fmt::format("waiting for gnuplot: {}", std::strerror(errno)));
  }
  const std::string err = slurp(err_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw GnuplotError(fmt::format("gnuplot failed ({}): {}",
                                   WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                                     : fmt::format("signal {}", WTERMSIG(status)),
                                   first_line(err)));
  }
  std::string svg = slurp(out_path);
  if (svg.find("<svg") == std::string::npos)
    throw GnuplotError("gnuplot wrote no SVG: " + first_line(err));
  return svg;
}

std::string inline_svg(std::string_view svg, std::string_view id_prefix) {
  std::string s(svg.substr(std::min(svg.size(), svg.find("<svg"))));

  // Every id the document defines, in either quoting.
  std::set<std::string> ids;
  for (const char* opener : {"id='", "id=\""}) {
    const char close = opener[3];
    for (size_t at = s.find(opener); at != std::string::npos; at = s.find(opener, at + 1)) {
      // Only a whole attribute name: preceded by whitespace.
      if (at == 0 || !std::isspace(static_cast<unsigned char>(s[at - 1]))) continue;
      const size_t begin = at + 4, end = s.find(close, begin);
      if (end != std::string::npos) ids.insert(s.substr(begin, end - begin));
    }
  }
  std::string prefix(id_prefix);
  auto replace_all = [&s](const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  };
  for (const std::string& id : ids) {
    for (char q : {'\'', '"'}) {
      replace_all(fmt::format("id={}{}{}", q, id, q), fmt::format("id={}{}{}{}", q, prefix, id, q));
      replace_all(fmt::format("{}#{}{}", q, id, q), fmt::format("{}#{}{}{}", q, prefix, id, q));
    }
    replace_all(fmt::format("url(#{})", id), fmt::format("url(#{}{})", prefix, id));
  }
  // gnuplot gives a curve's group and its key sample's group the same id; later copies get a
  // suffix so that the page's ids stay unique (references resolve to the first, as before).
  std::map<std::string, int> seen;
  for (const char* opener : {" id='", " id=\""}) {
    const char close = opener[4];
    for (size_t at = s.find(opener); at != std::string::npos; at = s.find(opener, at + 1)) {
      const size_t begin = at + 5, end = s.find(close, begin);
      if (end == std::string::npos) break;
      const int copies = seen[s.substr(begin, end - begin)]++;
      if (copies > 0) s.insert(end, fmt::format("-{}", copies + 1));
    }
  }
  return s;
}

std::string gnuplot_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "''";
    else if (c != '\n')
      out += c;
  }
  return out + "'";
}

}  // namespace cutune::report
