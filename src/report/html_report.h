#pragma once
// The report page: one self-contained HTML document (inline CSS and SVG, no scripts, no
// external files or fonts), readable offline. A summary table of every task, then per task:
// facts, best-so-far against trials with random search's expectation, the distribution of
// measured times, the per-round quality of the candidates, the top configurations with their
// knobs, and failures by status.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/report/task_summary.h"

namespace cutune::report {

struct PageInfo {
  std::vector<std::string> logs;      // as given on the command line
  int64_t records = 0;                // records read, after merging
  std::vector<std::string> warnings;  // from reading the logs
  std::string generated;              // timestamp
};

// Draws a gnuplot script into an SVG document (run_gnuplot in the report; a fake in tests).
using Plotter = std::function<std::string(const std::string& script)>;

std::string render_page(const std::vector<TaskSummary>& tasks, const PageInfo& info,
                        const Plotter& plot);

// Text made safe for HTML content and attribute values.
std::string html_escape(std::string_view text);

}  // namespace cutune::report
