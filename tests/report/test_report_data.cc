// The report's data: random search's expectation against brute force, the best-so-far curve,
// failure counts, rounds, baseline, histogram, and the page's structure with a fake plotter.

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <regex>

#include <catch2/catch.hpp>

#include "src/report/gnuplot.h"
#include "src/report/html_report.h"
#include "src/report/plots.h"
#include "src/report/random_expectation.h"
#include "src/report/task_summary.h"
#include "tests/records/record_fixtures.h"

using namespace cutune;
using namespace cutune::report;
using Catch::Matchers::Contains;
using cutune::testing::gemm_task;
using cutune::testing::make_record;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Every k-subset of a population of ok times plus `failed` failures: the mean best over subsets
// holding an ok entry, and the share holding none.
std::pair<double, double> brute_force(const std::vector<double>& ok, int failed, int k) {
  std::vector<double> all = ok;
  all.insert(all.end(), failed, kInf);
  const int n = static_cast<int>(all.size());
  double sum = 0;
  int64_t some = 0, none = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != k) continue;
    double best = kInf;
    for (int i = 0; i < n; ++i)
      if (mask & (1u << i)) best = std::min(best, all[i]);
    if (std::isfinite(best)) {
      sum += best;
      ++some;
    } else {
      ++none;
    }
  }
  return {some ? sum / some : std::nan(""), double(none) / double(some + none)};
}

Record with_baseline(Record r, double baseline_s, const std::string& name = "cudnn") {
  r.result.details.baseline.name = name;
  r.result.details.baseline.baseline_s = baseline_s;
  return r;
}

// The records of one task in trial order: ok 5 ms (config 1), compile_error (2), ok 3 ms (3),
// timeout (4), ok 4 ms (5), ok 3.5 ms (config 3 again), wrong_answer with a time (6).
std::vector<Record> sample_records() {
  const TaskKey t = gemm_task(256);
  std::vector<Record> r;
  r.push_back(make_record(t, 1, {5e-3, 5e-3, 6e-3}));
  r.push_back(make_record(t, 2, {}, MeasureStatus::compile_error));
  r.push_back(make_record(t, 3, {3e-3}));
  r.push_back(make_record(t, 4, {}, MeasureStatus::timeout));
  r.push_back(make_record(t, 5, {4e-3}));
  r.push_back(make_record(t, 3, {3.5e-3}));
  r.push_back(make_record(t, 6, {1e-3}, MeasureStatus::wrong_answer));
  r[1].result.error = "first compile error";
  return r;
}

}  // namespace

TEST_CASE("random search's expectation matches enumeration of every subset", "[report]") {
  const std::vector<double> ok = {3, 1, 4, 1.5, 9, 1.5};
  for (int failed : {0, 2}) {
    const int n = static_cast<int>(ok.size()) + failed;
    RandomCurve c = expected_random_best(ok, n, 100);
    REQUIRE(c.expected_best_s.size() == static_cast<size_t>(n));
    for (int k = 1; k <= n; ++k) {
      auto [mean, p_none] = brute_force(ok, failed, k);
      INFO("failed " << failed << ", k " << k);
      CHECK(c.expected_best_s[k - 1] == Approx(mean).epsilon(1e-12));
      CHECK(c.p_none[k - 1] == Approx(p_none).margin(1e-12));
    }
    CHECK(c.expected_best_s.back() == 1.0);  // drawing everything finds the optimum
  }
  // One draw: the mean over the ok times, given that it is ok.
  CHECK(expected_random_best({2, 4}, 2, 1).expected_best_s[0] == Approx(3.0));
  // Only failures: no expectation, and certainly no ok draw.
  RandomCurve none = expected_random_best({}, 3, 2);
  CHECK(std::isnan(none.expected_best_s[0]));
  CHECK(none.p_none[1] == 1.0);
  // The curve stops at the population.
  CHECK(expected_random_best({1, 2}, 4, 10).expected_best_s.size() == 4);
  CHECK_THROWS_AS(expected_random_best({1, 2, 3}, 2, 1), std::invalid_argument);
  CHECK_THROWS_AS(expected_random_best({-1}, 2, 1), std::invalid_argument);
}

TEST_CASE("the expectation stays finite and monotone on a large population", "[report]") {
  std::vector<double> ok;
  for (int i = 0; i < 20000; ++i) ok.push_back(1.0 + (i * 7919 % 20000) * 1e-3);
  RandomCurve c = expected_random_best(ok, 30000, 2000);
  REQUIRE(c.expected_best_s.size() == 2000);
  for (size_t k = 1; k < c.expected_best_s.size(); ++k) {
    REQUIRE(std::isfinite(c.expected_best_s[k]));
    REQUIRE(c.expected_best_s[k] <= c.expected_best_s[k - 1] + 1e-12);
  }
  // Best of 2000 draws from a uniform grid of 20000 over [1, 21): close to the minimum.
  CHECK(c.expected_best_s.back() < 1.02);
}

TEST_CASE("summarize_task: best so far, failures by status, top configurations", "[report]") {
  const std::vector<Record> records = sample_records();
  TaskSummary s = summarize_task(records[0].task, records, SpaceInfo{}, {.top = 3, .batch = 64});
  CHECK(s.trials == 7);
  CHECK(s.ok == 4);
  CHECK(s.distinct_configs == 6);
  REQUIRE(s.best_so_far_s.size() == 7);
  const std::vector<double> want = {5e-3, 5e-3, 3e-3, 3e-3, 3e-3, 3e-3, 3e-3};
  for (size_t i = 0; i < want.size(); ++i) CHECK(s.best_so_far_s[i] == Approx(want[i]));
  CHECK(s.best_s() == Approx(3e-3));
  CHECK(s.ok_times_s == std::vector<double>{5e-3, 3e-3, 4e-3, 3.5e-3});

  REQUIRE(s.failures.size() == 3);  // in enum order, the wrong answer's time ignored
  CHECK(s.failures[0].status == MeasureStatus::compile_error);
  CHECK(s.failures[0].count == 1);
  CHECK(s.failures[0].example_error == "first compile error");
  CHECK(s.failures[1].status == MeasureStatus::timeout);
  CHECK(s.failures[2].status == MeasureStatus::wrong_answer);

  REQUIRE(s.top.size() == 3);
  CHECK(s.top[0].index == 3);
  CHECK(s.top[0].trial == 3);
  CHECK(s.top[1].index == 5);
  CHECK(s.top[1].trial == 5);
  CHECK(s.top[2].index == 1);
  CHECK(s.top[2].time_s == Approx(5e-3));  // the median of 5, 5, 6 ms
  CHECK_FALSE(s.baseline);

  // Over the measured set: 6 distinct configurations, 3 of them ok (3, 4, 5 ms).
  CHECK(s.random_over == "measured");
  REQUIRE(s.random.expected_best_s.size() == 6);
  auto [mean1, none1] = brute_force({3e-3, 4e-3, 5e-3}, 3, 1);
  CHECK(s.random.expected_best_s[0] == Approx(mean1));
  CHECK(s.random.expected_best_s.back() == Approx(3e-3));

  // The best (3 ms) is one of 6 distinct configurations: found after 7/2 draws on average.
  CHECK(s.random_trials_to_best == Approx(3.5));

  nlohmann::json j = to_json(s);
  CHECK(j["random_expectation"]["over"] == "measured");
  CHECK(j["random_expectation"]["expected_trials_to_best"].get<double>() == Approx(3.5));
  CHECK_FALSE(j["random_expectation"].contains("expected_best_ms"));
  CHECK(j["trials"] == 7);
  CHECK(j["ok"] == 4);
  CHECK(j["failures"] == nlohmann::json{{"compile_error", 1}, {"timeout", 1}, {"wrong_answer", 1}});
  CHECK(j["best"]["config_index"] == 3);
  CHECK(j["best"]["time_ms"].get<double>() == Approx(3.0));
  CHECK(j["baseline"].is_null());
}

TEST_CASE("the curve is infinite until the first ok trial", "[report]") {
  const TaskKey t = gemm_task();
  std::vector<Record> r = {make_record(t, 1, {}, MeasureStatus::launch_error),
                           make_record(t, 2, {2e-3})};
  TaskSummary s = summarize_task(t, r, SpaceInfo{}, {});
  CHECK(s.best_so_far_s[0] == kInf);
  CHECK(s.best_so_far_s[1] == 2e-3);
  TaskSummary failed = summarize_task(t, {r[0]}, SpaceInfo{}, {});
  CHECK_FALSE(failed.best_s());
  CHECK(failed.top.empty());
  CHECK_FALSE(best_so_far_script(failed));
  CHECK_FALSE(histogram_script(failed));
  CHECK_FALSE(rounds_script(failed));
  CHECK(to_json(failed)["best"].is_null());
}

TEST_CASE("trials in proposal order, re-measurements are not trials but rank the top",
          "[report]") {
  const TaskKey t = gemm_task();
  // Arrival order 2, 0, 1 (results stream in as they finish), then a re-measurement of config 7.
  std::vector<Record> r = {make_record(t, 9, {1e-3}), make_record(t, 7, {4e-3}),
                           make_record(t, 8, {3e-3}), make_record(t, 7, {2e-3})};
  r[0].trial = 2;
  r[1].trial = 0;
  r[2].trial = 1;
  r[3].kind = RecordKind::remeasure;
  r[3].trial = 0;
  TaskSummary s = summarize_task(t, r, SpaceInfo{}, {.top = 2, .batch = 64});
  CHECK(s.trials == 3);
  REQUIRE(s.best_so_far_s.size() == 3);
  CHECK(s.best_so_far_s[0] == Approx(4e-3));
  CHECK(s.best_so_far_s[1] == Approx(3e-3));
  CHECK(s.best_so_far_s[2] == Approx(1e-3));
  REQUIRE_FALSE(s.top.empty());
  CHECK(s.top[0].index == 7);  // chosen on the re-measurement
  CHECK(s.top[0].time_s == Approx(2e-3));
  CHECK(s.top[0].trial == 1);  // first proposed
}

TEST_CASE("rounds: the share of the reference each round's ok candidates beat", "[report]") {
  const std::vector<Record> records = sample_records();
  TaskSummary s = summarize_task(records[0].task, records, SpaceInfo{}, {.top = 1, .batch = 3});
  // Reference: the ok trials 3, 3.5, 4, 5 ms. Beaten shares: 5 -> 0.125, 3 -> 0.875,
  // 4 -> 0.375, 3.5 -> 0.625.
  REQUIRE(s.rounds.size() == 3);
  CHECK(s.rounds[0].first_trial == 1);
  CHECK(s.rounds[0].last_trial == 3);
  CHECK(s.rounds[0].ok == 2);
  CHECK(s.rounds[0].failed == 1);
  CHECK(s.rounds[0].quality == Approx((0.125 + 0.875) / 2));
  CHECK(s.rounds[1].quality == Approx((0.375 + 0.625) / 2));
  CHECK(s.rounds[2].ok == 0);
  CHECK(s.rounds[2].failed == 1);
  CHECK(std::isnan(s.rounds[2].quality));
  CHECK(s.rounds[2].last_trial == 7);

  CHECK(beaten_share({1, 2, 2, 3}, 2) == Approx(0.5));
  CHECK(beaten_share({1, 2, 2, 3}, 0.5) == 1.0);
  CHECK(beaten_share({1, 2, 2, 3}, 9) == 0.0);
  CHECK_THROWS_AS(summarize_task(records[0].task, records, SpaceInfo{}, {.top = 1, .batch = 0}),
                  std::invalid_argument);
}

TEST_CASE("a replayed cache's space: the expectation and the rounds use the whole cache",
          "[report]") {
  const std::vector<Record> records = sample_records();
  SpaceInfo cache;
  cache.kind = SpaceInfo::Kind::cache;
  cache.population = 10;
  cache.size = 16;
  cache.ok_times_s = {1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3};
  TaskSummary s = summarize_task(records[0].task, records, cache, {.top = 1, .batch = 7});
  CHECK(s.random_over == "cache");
  REQUIRE(s.random.expected_best_s.size() == 7);
  CHECK(s.random.expected_best_s[2] == Approx(brute_force(cache.ok_times_s, 2, 3).first));
  // The search's best, 3 ms, is matched by 3 of the cache's 10 entries: (10 + 1) / (3 + 1),
  // which is the mean first position of 3 marked items over every placement among 10.
  double first_sum = 0;
  int placements = 0;
  for (uint32_t mask = 0; mask < (1u << 10); ++mask) {
    if (__builtin_popcount(mask) != 3) continue;
    first_sum += __builtin_ctz(mask) + 1;
    ++placements;
  }
  CHECK(s.random_trials_to_best == Approx(first_sum / placements));
  CHECK(s.random_trials_to_best == Approx(11.0 / 4));
  CHECK(to_json(s)["random_expectation"]["expected_best_ms"].get<double>() ==
        Approx(s.random.expected_best_s.back() * 1e3));
  // 5, 3, 4, 3.5 ms against the cache's 1..8 ms: shares 3.5/8, 5.5/8, 4.5/8, 5/8.
  CHECK(s.rounds[0].quality == Approx((3.5 + 5.5 + 4.5 + 5) / 8 / 4));
}

TEST_CASE("the baseline is the median of the records' baseline_s, ratio = baseline / best",
          "[report]") {
  std::vector<Record> r = sample_records();
  r[0] = with_baseline(r[0], 6e-3);
  r[2] = with_baseline(r[2], 9e-3);
  r[4] = with_baseline(r[4], 7.5e-3);
  TaskSummary s = summarize_task(r[0].task, r, SpaceInfo{}, {});
  REQUIRE(s.baseline);
  CHECK(s.baseline->name == "cudnn");
  CHECK(s.baseline->records == 3);
  CHECK(s.baseline->time_s == Approx(7.5e-3));
  CHECK(*s.baseline_ratio() == Approx(2.5));
  CHECK(to_json(s)["baseline"]["ratio"].get<double>() == Approx(2.5));

  std::vector<Record> cublas = sample_records();
  cublas[0].result.details.baseline.cublas_time_s = 1.5e-3;
  TaskSummary c = summarize_task(cublas[0].task, cublas, SpaceInfo{}, {});
  REQUIRE(c.baseline);
  CHECK(c.baseline->name == "cublas");
  CHECK(*c.baseline_ratio() == Approx(0.5));
}

TEST_CASE("log_histogram bins every time once", "[report]") {
  Histogram h = log_histogram({1e-3, 2e-3, 4e-3, 8e-3, 1e-2, 1e-3}, 4);
  REQUIRE(h.counts.size() == 4);
  REQUIRE(h.edges_s.size() == 5);
  CHECK(h.edges_s.front() == 1e-3);
  CHECK(h.edges_s.back() == 1e-2);
  int64_t total = 0;
  for (int64_t c : h.counts) total += c;
  CHECK(total == 6);
  CHECK(h.counts[0] == 2);  // 1e-3 twice; [1, 1.78) ms
  CHECK(h.counts[3] == 2);  // 8 ms and the maximum
  Histogram same = log_histogram({2e-3, 2e-3}, 10);
  CHECK(same.counts == std::vector<int64_t>{2});
  CHECK(log_histogram({}, 3).counts.empty());
}

TEST_CASE("inline_svg drops the prolog and makes ids unique per plot", "[report]") {
  const std::string svg =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE svg>\n<svg viewBox='0 0 10 10'>"
      "<defs><path id='gpPt1' d='M0,0'/><filter id=\"textbox\"/></defs>"
      "<use xlink:href='#gpPt1'/><g filter='url(#textbox)'/><g data-id='keep'/>"
      "<g id=\"plot_1\"/><g id=\"plot_1\"/></svg>";
  const std::string a = inline_svg(svg, "a-");
  CHECK(a.rfind("<svg", 0) == 0);
  CHECK_THAT(a, Contains("id='a-gpPt1'"));
  CHECK_THAT(a, Contains("href='#a-gpPt1'"));
  CHECK_THAT(a, Contains("id=\"a-textbox\""));
  CHECK_THAT(a, Contains("url(#a-textbox)"));
  CHECK_THAT(a, Contains("data-id='keep'"));
  CHECK(a.find("id='gpPt1'") == std::string::npos);
  CHECK(a.find("<?xml") == std::string::npos);
  CHECK_THAT(a, Contains("<g id=\"a-plot_1\"/><g id=\"a-plot_1-2\"/>"));
  CHECK(gnuplot_quote("it's") == "'it''s'");
}

TEST_CASE("the page: summary row, three figures per task, escaped names, no scripts", "[report]") {
  std::vector<Record> r = sample_records();
  for (Record& x : r) x.task.device_name = "GPU <&\"'>";
  r[0] = with_baseline(r[0], 9e-3);
  TaskSummary s = summarize_task(r[0].task, r, SpaceInfo{}, {.top = 5, .batch = 2});
  std::vector<std::string> scripts;
  const Plotter fake = [&](const std::string& script) {
    scripts.push_back(script);
    return std::string("<?xml version='1.0'?>\n<svg id='gnuplot_canvas'><path d='M0,0'/></svg>");
  };
  const std::string page = render_page({s, s}, PageInfo{{"a.jsonl"}, 14, {"w <1>"}, "now"}, fake);
  CHECK(scripts.size() == 6);
  CHECK_THAT(page, Contains("GPU &lt;&amp;&quot;&#39;&gt;"));
  CHECK(page.find("GPU <&") == std::string::npos);
  CHECK_THAT(page, Contains("warning: w &lt;1&gt;"));
  CHECK_THAT(page, Contains("href=\"#task-2\""));
  CHECK_THAT(page, Contains("id='task-1-best-gnuplot_canvas'"));
  CHECK_THAT(page, Contains("id='task-2-rounds-gnuplot_canvas'"));
  CHECK_THAT(page, Contains("3.00×"));  // cuDNN 9 ms / best 3 ms
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("<link") == std::string::npos);

  // The scripts carry their data inline and draw to stdout.
  CHECK_THAT(scripts[0], Contains("$best << EOD\n1 5\n"));
  CHECK_THAT(scripts[0], Contains("$random << EOD"));
  CHECK_THAT(scripts[0], Contains("'cuDNN 9 ms'"));
  CHECK(scripts[0].find("set output") == std::string::npos);
  CHECK_THAT(scripts[2], Contains("$rounds << EOD\n1 0.125000\n"));
}

TEST_CASE("gnuplot draws the plots as SVG", "[report]") {
  const std::optional<std::filesystem::path> gnuplot = find_gnuplot();
  if (!gnuplot) {
    std::cout << "skipped: gnuplot not found on PATH (Debian package gnuplot-nox)" << std::endl;
    std::exit(77);
  }
  std::vector<Record> r = sample_records();
  r[0] = with_baseline(r[0], 9e-3);
  TaskSummary s = summarize_task(r[0].task, r, SpaceInfo{}, {.top = 5, .batch = 2});
  for (const std::optional<std::string>& script :
       {best_so_far_script(s), histogram_script(s), rounds_script(s)}) {
    REQUIRE(script);
    const std::string svg = inline_svg(run_gnuplot(*gnuplot, *script), "p-");
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK_THAT(svg, Contains("</svg>"));
    CHECK_THAT(svg, Contains("<path"));
    CHECK(svg.find("<script") == std::string::npos);
  }
  CHECK_THROWS_WITH(run_gnuplot(*gnuplot, "plot $nothing using 1:2\n"), Contains("gnuplot failed"));
}
