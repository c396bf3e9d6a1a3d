// `cutune report` end to end: from a replayed tuning run on a small cache this test writes and
// from records written directly; bad input; and the page rendered by headless Chromium.
// Cases that need gnuplot or Chromium exit 77 (skipped) with the reason where they are absent.

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "src/records/tuning_log.h"
#include "tests/records/record_fixtures.h"

using namespace cutune;
using Catch::Matchers::Contains;
using cutune::testing::make_record;
using cutune::testing::read_file;
using cutune::testing::ScratchDir;
using cutune::testing::write_file;
namespace fs = std::filesystem;

namespace {

const std::string kCutune = std::string(CUTUNE_BINARY_DIR) + "/src/cli/cutune";

struct Run {
  int status = -1;
  std::string out, err, command;
  int err_lines() const {
    int n = 0;
    for (char c : err) n += c == '\n';
    return n + (!err.empty() && err.back() != '\n');
  }
};

// `env` (e.g. "PATH=/nonexistent") prefixes the command.
Run run(const ScratchDir& dir, const std::string& args, const std::string& env = "") {
  Run r;
  r.command = env + (env.empty() ? "" : " ") + kCutune + " " + args;
  const std::string shell = r.command + " >" + (dir / "stdout").string() + " 2>" +
                            (dir / "stderr").string() + " </dev/null";
  const int raw = std::system(shell.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_file(dir / "stdout");
  r.err = read_file(dir / "stderr");
  return r;
}

#define INFO_RUN(r)                                                    \
  INFO("$ " << (r).command << "\nexit " << (r).status << "\nstdout:\n" \
            << (r).out << "stderr:\n"                                  \
            << (r).err)

bool on_path(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

void need_gnuplot() {
  if (on_path("gnuplot")) return;
  std::cout << "skipped: gnuplot not found on PATH (Debian package gnuplot-nox)" << std::endl;
  std::exit(77);
}

// A 4 x 4 space, 3 entries failed; times in ms as Kernel Tuner writes them.
std::string tiny_cache() {
  nlohmann::ordered_json cache = nlohmann::ordered_json::object();
  for (int bx : {8, 16, 32, 64}) {
    for (int by : {1, 2, 4, 8}) {
      nlohmann::ordered_json e = {{"bx", bx}, {"by", by}};
      if ((bx == 8 && by == 8) || (bx == 64 && by == 1) || (bx == 32 && by == 2)) {
        e["time"] = "RuntimeFailedConfig";
      } else {
        const double t = 1.0 + std::abs(std::log2(bx * by) - 6) * 0.5 + bx * 0.001;
        e["time"] = t;
        e["times"] = {t, t};
      }
      cache[std::to_string(bx) + "," + std::to_string(by)] = e;
    }
  }
  // The cache reader streams: "tune_params_keys" must come before "cache".
  return nlohmann::ordered_json{{"device_name", "Tiny GPU"},
                                {"kernel_name", "tiny"},
                                {"problem_size", {64, 64}},
                                {"tune_params_keys", {"bx", "by"}},
                                {"tune_params", {{"bx", {8, 16, 32, 64}}, {"by", {1, 2, 4, 8}}}},
                                {"objective", "time"},
                                {"cache", cache}}
      .dump();
}

// Two template tasks: gemm 256^3 (ok trials carrying a cuDNN-style baseline, and failures) and
// gemm 128^3 (two ok trials).
void write_template_log(const fs::path& path) {
  TaskKey big = testing::gemm_task(256), small = testing::gemm_task(128);
  big.template_name = small.template_name = "gemm_nn";
  LogWriter w(path);
  const double times[] = {4e-3, 2e-3, 3e-3};
  for (int i = 0; i < 3; ++i) {
    Record r = make_record(big, 10 + i, {times[i]});
    r.result.details.baseline.name = "cublas";
    r.result.details.baseline.baseline_s = 5e-3;
    w.append(r);
  }
  w.append(make_record(big, 20, {}, MeasureStatus::compile_error));
  w.append(make_record(big, 21, {}, MeasureStatus::compile_error));
  w.append(make_record(big, 22, {}, MeasureStatus::runtime_error));
  w.append(make_record(small, 1, {1e-3}));
  w.append(make_record(small, 2, {0.5e-3}));
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report of a replayed tuning run: --json agrees with the log", "[report][cli]") {
  need_gnuplot();
  ScratchDir dir;
  write_file(dir / "cache.json", tiny_cache());
  const std::string cache = (dir / "cache.json").string(), log = (dir / "log.jsonl").string();
  Run tune = run(dir, "tune --replay " + cache +
                          " --tuner random --trials 10 --batch 4 --seed 3 "
                          "--log " +
                          log + " --quiet");
  INFO_RUN(tune);
  REQUIRE(tune.status == 0);

  const std::string out = (dir / "report.html").string();
  Run r = run(dir, "report " + log + " --cache " + cache + " --out " + out + " --batch 4 --json");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["tasks"].size() == 1);
  const nlohmann::json& t = j["tasks"][0];

  const std::vector<Record> records = read_log(log).records;
  int64_t invalid = 0;
  double best = 1e300;
  for (const Record& x : records) {
    if (x.result.ok())
      best = std::min(best, x.result.median_s());
    else
      ++invalid;
  }
  CHECK(t["trials"] == records.size());
  CHECK(t["ok"] == records.size() - invalid);
  CHECK(t["best"]["time_ms"].get<double>() == Approx(best * 1e3));
  if (invalid > 0)
    CHECK(t["failures"]["invalid"] == invalid);
  else
    CHECK(t["failures"].empty());
  CHECK(t["random_expectation"]["over"] == "cache");
  CHECK(t["random_expectation"]["trials"] == 10);
  CHECK(t["space_size"] == 16);
  CHECK(t["device"] == "Tiny GPU");

  const std::string page = read_file(out);
  CHECK(count(page, "<svg") == 3);
  CHECK_THAT(page, Contains("the cache's entries, 13 of them ok"));
  CHECK(page.find("<script") == std::string::npos);
  CHECK_FALSE(fs::exists(out + ".tmp-" + std::to_string(::getpid())));

  // Without the cache the expectation is over the measured configurations.
  Run m = run(dir, "report " + log + " --out " + out + " --force --json");
  INFO_RUN(m);
  REQUIRE(m.status == 0);
  CHECK(nlohmann::json::parse(m.out)["tasks"][0]["random_expectation"]["over"] == "measured");
  CHECK_THAT(read_file(out), Contains("pass it with --cache"));
}

TEST_CASE("report of template tasks: failures by status, baseline ratio, space size",
          "[report][cli]") {
  need_gnuplot();
  ScratchDir dir;
  const std::string log = (dir / "t.jsonl").string(), out = (dir / "t.html").string();
  write_template_log(log);
  Run r = run(dir, "report " + log + " --out " + out + " --json");
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["records"] == 8);
  REQUIRE(j["tasks"].size() == 2);
  const nlohmann::json& small = j["tasks"][0];  // TaskKey order: 128 before 256
  const nlohmann::json& big = j["tasks"][1];
  CHECK(small["trials"] == 2);
  CHECK(small["baseline"].is_null());
  CHECK(big["trials"] == 6);
  CHECK(big["ok"] == 3);
  CHECK(big["failures"] == nlohmann::json{{"compile_error", 2}, {"runtime_error", 1}});
  CHECK(big["best"]["config_index"] == 11);
  CHECK(big["best"]["trial"] == 2);
  CHECK(big["baseline"]["name"] == "cublas");
  CHECK(big["baseline"]["ratio"].get<double>() == Approx(2.5));

  // The template's space size, as `cutune space` reports it.
  Run space = run(dir, "space gemm --shape 256,256,256 --json");
  REQUIRE(space.status == 0);
  CHECK(big["space_size"] == nlohmann::json::parse(space.out)["size"]);

  const std::string page = read_file(out);
  CHECK(count(page, "<svg") == 6);
  CHECK_THAT(page, Contains("<td>compile_error</td><td class=\"num\">2</td>"));
  CHECK_THAT(page, Contains("2.50×</span> cuBLAS"));

  // Without --json: one line per task and where the page went.
  Run text = run(dir, "report " + log + " --out " + out + " --force");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Contains("6 trials, 3 ok, best 2 ms (2.50x cublas)"));
  CHECK_THAT(text.out, Contains("wrote " + out));
}

TEST_CASE("report: bad input is one line and exit code 2", "[report][cli]") {
  ScratchDir dir;
  const std::string log = (dir / "t.jsonl").string(), out = (dir / "t.html").string();
  write_template_log(log);

  // Checked before anything else, so it runs without gnuplot too.
  Run no_gnuplot = run(dir, "report " + log + " --out " + out, "PATH=/nonexistent");
  INFO_RUN(no_gnuplot);
  CHECK(no_gnuplot.status == 2);
  CHECK(no_gnuplot.err_lines() == 1);
  CHECK_THAT(no_gnuplot.err, Contains("gnuplot") && Contains("gnuplot-nox"));
  CHECK_FALSE(fs::exists(out));

  need_gnuplot();
  const std::string lines = read_file(log);
  const size_t second = lines.find('\n') + 1;
  write_file(dir / "bad.jsonl",
             lines.substr(0, second) + "{\"v\":1,\"task\":\n" + lines.substr(second));
  write_file(dir / "exists.html", "keep me");
  fs::create_directories(dir / "folder");
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0644) == 0);
  const std::string d = (dir / "").string();
  const std::pair<std::string, std::string> cases[] = {
      {"report " + d + "missing.jsonl --out " + out, "no such log"},
      {"report " + d + "folder --out " + out, "is a folder"},
      {"report " + d + "bad.jsonl --out " + out, "bad.jsonl:2:"},
      {"report " + log + " --out " + d + "exists.html", "pass --force"},
      {"report " + log + " --out " + d + "folder", "is a directory"},
      {"report " + log + " --out " + d + "pipe --force", "is a FIFO, not a regular file"},
      {"report " + log + " --out " + d + "nowhere/x.html", "no such folder"},
      {"report " + log + " --out " + out + " --batch 0", "--batch must be >= 1"},
      {"report " + log + " --out " + log + " --force", "is one of the logs"},
      {"report " + log + " --out " + out + " --cache " + d + "missing.json", "missing.json"},
      {"report --out " + out, "logs"},
  };
  for (const auto& [args, message] : cases) {
    Run r = run(dir, args);
    INFO_RUN(r);
    CHECK(r.status == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains(message));
  }
  CHECK(read_file(dir / "exists.html") == "keep me");
  CHECK(fs::is_fifo(fs::symlink_status(dir / "pipe")));
  CHECK(read_file(log) == lines);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("headless Chromium renders every plot without console errors", "[report][cli]") {
  need_gnuplot();
  if (!on_path("chromium")) {
    std::cout << "skipped: chromium not found on PATH (Debian package chromium)" << std::endl;
    std::exit(77);
  }
  ScratchDir dir;
  const std::string log = (dir / "t.jsonl").string(), out = (dir / "t.html").string();
  write_template_log(log);
  Run r = run(dir, "report " + log + " --out " + out);
  INFO_RUN(r);
  REQUIRE(r.status == 0);

  const std::string chromium =
      "timeout 120 chromium --headless --disable-gpu --no-sandbox --no-first-run "
      "--user-data-dir=" +
      (dir / "profile").string() +
      " --enable-logging=stderr --v=0 --hide-scrollbars --window-size=1100,2400 ";
  // 1. The page as written: a screenshot, and nothing on the console (a script error, or a
  //    resource it failed to load, would show there).
  const fs::path png = dir / "page.png";
  const std::string shot = chromium + "--screenshot=" + png.string() + " file://" + out + " 2>" +
                           (dir / "shot.err").string() + " >/dev/null";
  REQUIRE(std::system(shot.c_str()) == 0);
  const std::string log_text = read_file(dir / "shot.err");
  std::istringstream lines(log_text);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.find(":CONSOLE") == std::string::npos);
  }
  const std::string image = read_file(png);
  REQUIRE(image.size() > 24);
  CHECK(image.substr(1, 3) == "PNG");
  CHECK(image.size() > 20000);  // a blank page compresses to a few KB

  // 2. A copy with a probe at the end of the body that measures each plot as laid out.
  std::string probed = read_file(out);
  const std::string probe = R"(<script>
const rows = [];
for (const svg of document.querySelectorAll('figure svg')) {
  const r = svg.getBoundingClientRect();
  const shapes = svg.querySelectorAll('path, rect, polyline, polygon, circle, use, text').length;
  // The first data set as drawn (gnuplot groups it, with its key sample, under plot_1).
  let w = 0, h = 0;
  for (const g of svg.querySelectorAll('g[id*="gnuplot_plot_1"]')) {
    if (!/gnuplot_plot_1(-[0-9]+)?$/.test(g.id)) continue;
    const b = g.getBBox();
    w = Math.max(w, b.width);
    h = Math.max(h, b.height);
  }
  rows.push(['plot', svg.closest('figure').id, Math.round(r.width), Math.round(r.height), shapes,
             Math.round(w), Math.round(h)].join(' '));
}
const pre = document.createElement('pre');
pre.id = 'probe';
pre.textContent = rows.join('\n');
document.body.appendChild(pre);
</script>
)";
  probed.insert(probed.rfind("</body>"), probe);
  write_file(dir / "probed.html", probed);
  const std::string dump = chromium + "--dump-dom file://" + (dir / "probed.html").string() + " >" +
                           (dir / "dom.html").string() + " 2>" + (dir / "dom.err").string();
  REQUIRE(std::system(dump.c_str()) == 0);
  const std::string dom = read_file(dir / "dom.html");
  const std::regex row(R"(plot (\S+) (\d+) (\d+) (\d+) (\d+) (\d+))");
  int plots = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), row); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    INFO("plot " << m[1] << ": " << m[0]);
    CHECK(std::stoi(m[2]) >= 300);  // laid out width, px
    CHECK(std::stoi(m[3]) >= 100);  // height
    CHECK(std::stoi(m[4]) >= 10);   // drawn elements
    // The first data set was drawn; the best-so-far curve runs across every trial.
    CHECK(std::stoi(m[5]) >= (m[1].str().ends_with("-best") ? 400 : 1));
    CHECK(std::stoi(m[6]) >= 1);
    ++plots;
  }
  INFO(read_file(dir / "dom.err"));
  CHECK(plots == 6);
}
