#pragma once
// The gnuplot scripts of a task's three plots, data included (as datablocks): each draws one
// SVG to gnuplot's standard output. std::nullopt when the task has nothing to draw (no ok
// trial; no round with an ok candidate).

#include <optional>
#include <string>

#include "src/report/task_summary.h"

namespace cutune::report {

// Best time so far against trials (a step line), random search's expectation (dashed) and the
// cuBLAS/cuDNN baseline (a horizontal line) where measured. Times in ms; log scale when they
// span more than a factor of 5.
std::optional<std::string> best_so_far_script(const TaskSummary& summary);

// How many ok trials fell in each log-spaced band of time, with the best and the baseline
// marked.
std::optional<std::string> histogram_script(const TaskSummary& summary, int bins = 30);

// The per-round candidate quality (RoundQuality::quality) against random proposals' 0.5.
std::optional<std::string> rounds_script(const TaskSummary& summary);

}  // namespace cutune::report
