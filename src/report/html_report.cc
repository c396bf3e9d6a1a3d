#include "src/report/html_report.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "src/report/gnuplot.h"
#include "src/report/plots.h"

namespace cutune::report {
namespace {

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #222;
       max-width: 1000px; margin: 1.5em auto; padding: 0 1em; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 2px solid #1f5fa8; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.4em; }
p.meta, p.note, figcaption { color: #555; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef2f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; margin: 0.8em 0; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
figure { margin: 1em 0; }
figure svg { width: 100%; height: auto; max-width: 760px; display: block; border: 1px solid #e4e4e4; }
.good { color: #2a8a3e; font-weight: bold; }
.bad { color: #b03a2e; font-weight: bold; }
.warn { background: #fff4e0; border: 1px solid #e0b060; padding: 0.5em; }
code { font-size: 0.95em; }
div.scroll { overflow-x: auto; }
)";

std::string ms(double s) { return fmt::format("{:.4g}", s * 1e3); }

std::string baseline_name(const Baseline& b) {
  return b.name == "cudnn" ? "cuDNN" : b.name == "cublas" ? "cuBLAS" : b.name;
}

std::string ratio_text(const TaskSummary& s) {
  auto r = s.baseline_ratio();
  if (!r) return "–";
  return fmt::format("<span class=\"{}\">{:.2f}×</span> {}", *r >= 1 ? "good" : "bad", *r,
                     html_escape(baseline_name(*s.baseline)));
}

std::string failures_text(const TaskSummary& s) {
  if (s.failures.empty()) return "none";
  std::string out;
  for (const StatusCount& c : s.failures)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", c.count, to_string(c.status));
  return out;
}

std::string space_text(const SpaceInfo& space) {
  switch (space.kind) {
    case SpaceInfo::Kind::cache:
      return fmt::format(
          "{} valid configurations (the cache's entries, {} of them ok) of {} "
          "knob combinations, from {}",
          space.population, space.ok_times_s.size(), space.size, html_escape(space.source));
    case SpaceInfo::Kind::template_space:
      return fmt::format(
          "{} configurations in the template's space ({}); their times are "
          "known only where measured",
          space.size, html_escape(space.source));
    case SpaceInfo::Kind::unknown:
      break;
  }
  return space.source.empty() ? "unknown" : "unknown (" + html_escape(space.source) + ")";
}

std::string random_text(const TaskSummary& s) {
  if (!std::isfinite(s.random_trials_to_best)) return "–";
  std::string out = fmt::format(
      "needs {:.1f} trials on average to do as well as this search's best (found at trial {}), "
      "drawing from {}",
      s.random_trials_to_best, s.top.empty() ? 0 : s.top.front().trial,
      s.random_over == "cache" ? "the whole cache" : "the measured configurations");
  if (s.random_over == "cache" && !s.random.expected_best_s.empty() &&
      std::isfinite(s.random.expected_best_s.back())) {
    out += fmt::format("; after {} trials it expects {} ms", s.random.expected_best_s.size(),
                       ms(s.random.expected_best_s.back()));
  }
  return out;
}

std::string figure(const Plotter& plot, const std::optional<std::string>& script,
                   const std::string& id, const std::string& caption) {
  if (!script) return fmt::format("<p class=\"note\">{} Nothing to plot.</p>\n", caption);
  return fmt::format("<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n", id,
                     inline_svg(plot(*script), id + "-"), caption);
}

std::string top_table(const TaskSummary& s) {
  if (s.top.empty()) return "<p class=\"note\">No ok configuration.</p>\n";
  // Columns: every knob any listed configuration has, in the first one's order, then others.
  std::vector<std::string> knobs;
  std::set<std::string> seen;
  for (const TopConfig& t : s.top) {
    if (!t.knobs.is_object()) continue;
    for (const auto& [name, value] : t.knobs.items())
      if (seen.insert(name).second) knobs.push_back(name);
  }
  const double best = s.top.front().time_s;
  std::string out =
      "<div class=\"scroll\"><table class=\"top\">\n<tr><th>#</th><th>config</th><th>time (ms)</th>"
      "<th>vs best</th><th>trial</th>";
  for (const std::string& k : knobs) out += "<th>" + html_escape(k) + "</th>";
  out += "</tr>\n";
  for (size_t i = 0; i < s.top.size(); ++i) {
    const TopConfig& t = s.top[i];
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.3f}</td><td class=\"num\">{}</td>",
        i + 1, t.index, ms(t.time_s), t.time_s > 0 ? best / t.time_s : 1.0, t.trial);
    for (const std::string& k : knobs) {
      std::string v = t.knobs.is_object() && t.knobs.contains(k) ? t.knobs[k].dump() : "";
      out += "<td class=\"num\">" + html_escape(v) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

std::string failure_table(const TaskSummary& s) {
  if (s.failures.empty())
    return fmt::format("<p>No failures: all {} trials measured ok.</p>\n", s.trials);
  std::string out =
      "<table class=\"failures\">\n<tr><th>status</th><th>trials</th><th>share</th>"
      "<th>first error</th></tr>\n";
  for (const StatusCount& c : s.failures) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td><td>{}</td></tr>\n",
        to_string(c.status), c.count, 100.0 * c.count / std::max<int64_t>(s.trials, 1),
        html_escape(c.example_error));
  }
  return out + "</table>\n";
}

std::string task_section(const TaskSummary& s, size_t n, const Plotter& plot) {
  const std::string id = fmt::format("task-{}", n);
  std::string out =
      fmt::format("<section id=\"{}\">\n<h2>{}. {}</h2>\n", id, n, html_escape(s.task.to_string()));
  out += "<dl class=\"facts\">\n";
  out += fmt::format("<dt>trials</dt><dd>{} ({} ok, {} distinct configurations)</dd>\n", s.trials,
                     s.ok, s.distinct_configs);
  out += fmt::format("<dt>space</dt><dd>{}</dd>\n", space_text(s.space));
  if (!s.top.empty()) {
    out += fmt::format("<dt>best</dt><dd>{} ms, configuration {}, found at trial {}</dd>\n",
                       ms(s.top.front().time_s), s.top.front().index, s.top.front().trial);
  } else {
    out += "<dt>best</dt><dd>no ok trial</dd>\n";
  }
  out += fmt::format("<dt>random search</dt><dd>{}</dd>\n", random_text(s));
  if (s.baseline) {
    out += fmt::format(
        "<dt>{}</dt><dd>{} ms (median of {} records); tuned / baseline speed: "
        "{}</dd>\n",
        html_escape(baseline_name(*s.baseline)), ms(s.baseline->time_s), s.baseline->records,
        ratio_text(s));
  } else {
    out += "<dt>baseline</dt><dd>not measured (no cuBLAS/cuDNN time in the records)</dd>\n";
  }
  out += fmt::format("<dt>failures</dt><dd>{}</dd>\n</dl>\n", failures_text(s));

  const std::string random_caption =
      s.random_over == "cache"
          ? "The dashed line is random search's exact expectation over the replayed cache: the "
            "expected best of k configurations drawn without replacement from every entry of "
            "the space (failed entries never count as the best), given that one of them is ok."
          : "The dashed line is the expected best of k configurations drawn without replacement "
            "from this task's measured configurations (each with its best ok time; failed ones "
            "never count as the best), given that one of them is ok. The whole space's times "
            "are not known, so this is random search restricted to what was measured; it meets "
            "the search's curve at the last trial.";
  out += "<h3>Best so far</h3>\n";
  out += figure(plot, best_so_far_script(s), id + "-best",
                "The fastest median time among the first t trials. " + random_caption);
  out += "<h3>Distribution of measured times</h3>\n";
  out += figure(plot, histogram_script(s), id + "-hist",
                fmt::format("Median times of the {} ok trials, in log-spaced bins.", s.ok));
  out += "<h3>Candidate quality per round</h3>\n";
  out += figure(
      plot, rounds_script(s), id + "-rounds",
      fmt::format(
          "A proxy for the cost model's ranking accuracy: the records do not hold the model's "
          "predicted scores, so each round of {} trials is judged by the candidates the search "
          "chose to measure: the mean share of {} that a round's ok candidate is faster than "
          "(ties count one half). Random proposals score 0.5 in expectation; a model that ranks "
          "well proposes candidates near 1.{}",
          s.batch,
          s.random_over == "cache" ? "the whole cache's ok configurations"
                                   : "all of this task's ok trials",
          s.random_over == "cache" ? ""
                                   : " Against the measured trials the rounds average 0.5 by "
                                     "construction, so the curve shows how the search improved "
                                     "over its own history."));
  out += fmt::format("<h3>Top {} configurations</h3>\n", s.top.size());
  out += top_table(s);
  out += "<h3>Failures by status</h3>\n";
  out += failure_table(s);
  return out + "</section>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_page(const std::vector<TaskSummary>& tasks, const PageInfo& info,
                        const Plotter& plot) {
  std::string logs;
  for (const std::string& l : info.logs) logs += (logs.empty() ? "" : ", ") + html_escape(l);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>cutune report: {}</title>\n<style>{}</style>\n</head>\n<body>\n"
      "<h1>cutune tuning report</h1>\n"
      "<p class=\"meta\">{} records of {} task(s) from {}; generated {}. Times are medians of "
      "each measurement's repeats, in milliseconds.</p>\n",
      logs, kStyle, info.records, tasks.size(), logs, html_escape(info.generated));
  for (const std::string& w : info.warnings)
    out += "<p class=\"warn\">warning: " + html_escape(w) + "</p>\n";

  out +=
      "<table class=\"summary\">\n<tr><th>#</th><th>task</th><th>trials</th><th>ok</th>"
      "<th>best (ms)</th><th>found at trial</th><th>random search: trials to match</th>"
      "<th>vs baseline</th><th>failures</th></tr>\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskSummary& s = tasks[i];
    const bool has_best = !s.top.empty();
    out += fmt::format(
        "<tr><td class=\"num\">{0}</td><td><a href=\"#task-{0}\">{1}</a></td>"
        "<td class=\"num\">{2}</td><td class=\"num\">{3}</td><td class=\"num\">{4}</td>"
        "<td class=\"num\">{5}</td><td class=\"num\">{6}</td><td>{7}</td><td>{8}</td></tr>\n",
        i + 1, html_escape(s.task.to_string()), s.trials, s.ok,
        has_best ? ms(s.top.front().time_s) : "–",
        has_best ? std::to_string(s.top.front().trial) : "–",
        std::isfinite(s.random_trials_to_best)
            ? fmt::format("{:.1f}{}", s.random_trials_to_best,
                          s.random_over == "cache" ? "" : " (of the measured)")
            : "–",
        ratio_text(s), failures_text(s));
  }
  out += "</table>\n";
  for (size_t i = 0; i < tasks.size(); ++i) out += task_section(tasks[i], i + 1, plot);
  return out + "</body>\n</html>\n";
}

}  // namespace cutune::report
