#pragma once
// One tuning for a range of token counts M (a GEMM's rows), and the dispatch table it ends in:
// the M intervals, each served by one kernel of run-time M (Template::runtime_m).
//
//   `--shape M=1..8192,N,K`   a range: tuned at points spread over it (range_points);
//   `--shape M=1,16,128,N,K`  a list: tuned at those M.
//
// After the points are tuned, the best few configurations of each are timed at every point (a
// matrix, candidates x points); choose_dispatch then takes the fewest kernels, each covering a
// contiguous run of the sorted points, that stay within a tolerance of each point's best.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cutune {

// A shape whose first size, M, is a range or a list.
struct MRange {
  std::vector<int64_t> points;  // the M to tune at, ascending, distinct
  int64_t lo = 0, hi = 0;       // the M the table serves: [lo, hi]
  bool is_range = false;        // lo..hi (the points are range_points of it), else a list
  std::vector<int64_t> rest;    // the other sizes (N, K)
};

// Whether `text` names a range or a list of M (it starts with "M=").
bool is_m_range(const std::string& text);
// Parses "M=lo..hi,N,K" or "M=m1,m2,...,N,K" (`sizes` sizes in all: 3 for a GEMM). TaskError,
// one line, for anything else: lo > hi, a dimension other than M, a second range, a size
// below 1 or above 2^20, a list of fewer than two M. `max_points` caps a range's points.
MRange parse_m_range(const std::string& text, size_t sizes, int max_points);

// Points spread over [lo, hi]: lo, hi, the powers of two between and the midpoints 3·2^(k-1)
// between those (1, 2, 3, 4, 6, 8, 12, 16, ...), at most `max_points` (>= 2) of them, taken
// evenly from that list (ends kept) where it has more.
std::vector<int64_t> range_points(int64_t lo, int64_t hi, int max_points);

// M between consecutive points, where a table is checked but not tuned: the geometric midpoint
// of each pair whose gap holds an M that is neither (rounded, distinct from both).
std::vector<int64_t> check_points(const std::vector<int64_t>& points);

// One row of a dispatch table: candidate `candidate` serves points [first, last] (indices
// into the sorted points).
struct DispatchSegment {
  size_t first = 0, last = 0;
  size_t candidate = 0;
};

// The fewest segments, covering the points in order, whose candidate's time at each point is
// within (1 + tolerance) of that point's best time. times[c][p]: candidate c at point p
// (seconds; infinity or NaN where it failed). Among the tables of fewest segments, the one of
// least summed time relative to each point's best; among those, the lowest candidate indices
// (ties are decided the same way every time). TaskError where a point has no finite time.
std::vector<DispatchSegment> choose_dispatch(const std::vector<std::vector<double>>& times,
                                             double tolerance);

// The M interval each segment serves: from the range's lo (or the segment's first point) up to
// one less than the next segment's first point, the last up to hi.
struct MInterval {
  int64_t lo = 0, hi = 0;
};
std::vector<MInterval> segment_intervals(const std::vector<DispatchSegment>& segments,
                                         const std::vector<int64_t>& points, int64_t lo,
                                         int64_t hi);

// The index of the interval that holds m, or nullopt outside them all (intervals ascending).
std::optional<size_t> interval_of(const std::vector<MInterval>& intervals, int64_t m);

}  // namespace cutune
