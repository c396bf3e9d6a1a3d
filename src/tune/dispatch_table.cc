#include "src/tune/dispatch_table.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/template.h"

namespace cutune {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 20;  // check_gemm_shape's limit

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// A size of the shape "M=...": digits only, 1 to 2^20.
int64_t size_of(const std::string& item, const std::string& text) {
  const bool digits =
      !item.empty() && item.size() <= 8 &&
      std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int64_t v = digits ? std::stoll(item) : 0;
  if (v < 1 || v > kMaxSize) {
    throw TaskError(
        fmt::format("--shape {}: '{}' is not a size from 1 to {} (expected "
                    "M=lo..hi,N,K or M=m1,m2,...,N,K)",
                    text, item, kMaxSize));
  }
  return v;
}

}  // namespace

bool is_m_range(const std::string& text) { return text.find('=') != std::string::npos; }

MRange parse_m_range(const std::string& text, size_t sizes, int max_points) {
  const std::string expected = "expected M=lo..hi,N,K or M=m1,m2,...,N,K";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || text.substr(0, eq) != "M") {
    throw TaskError(
        fmt::format("--shape {}: only M may be a range or a list ({})", text, expected));
  }
  std::vector<std::string> items = split(text.substr(eq + 1), ',');
  if (items.size() < sizes) {
    throw TaskError(fmt::format("--shape {}: M needs the other {} sizes after it ({})", text,
                                sizes - 1, expected));
  }
  for (const std::string& item : items) {
    if (item.find('=') != std::string::npos ||
        (&item != &items.front() && item.find("..") != std::string::npos)) {
      throw TaskError(fmt::format("--shape {}: one dimension, M, may be a range or a list ({})",
                                  text, expected));
    }
  }
  MRange r;
  for (size_t i = items.size() - (sizes - 1); i < items.size(); ++i)
    r.rest.push_back(size_of(items[i], text));
  items.resize(items.size() - (sizes - 1));
  if (const size_t dots = items.front().find(".."); dots != std::string::npos) {
    if (items.size() != 1) {
      throw TaskError(
          fmt::format("--shape {}: M is a range or a list, not both ({})", text, expected));
    }
    r.is_range = true;
    r.lo = size_of(items.front().substr(0, dots), text);
    r.hi = size_of(items.front().substr(dots + 2), text);
    if (r.lo >= r.hi) {
      throw TaskError(fmt::format("--shape {}: the range's first M must be below its last ({})",
                                  text, expected));
    }
    if (max_points < 2) throw TaskError("--points must be at least 2");
    r.points = range_points(r.lo, r.hi, max_points);
    return r;
  }
  for (const std::string& item : items) r.points.push_back(size_of(item, text));
  std::sort(r.points.begin(), r.points.end());
  r.points.erase(std::unique(r.points.begin(), r.points.end()), r.points.end());
  if (r.points.size() < 2) {
    throw TaskError(
        fmt::format("--shape {}: a list of M needs two M or more ({})", text, expected));
  }
  r.lo = r.points.front();
  r.hi = r.points.back();
  return r;
}

std::vector<int64_t> range_points(int64_t lo, int64_t hi, int max_points) {
  std::vector<int64_t> all{lo};
  for (int64_t p = 1; p < hi; p *= 2) {
    for (int64_t v : {p, p + p / 2}) {
      if (v > lo && v < hi && v != all.back()) all.push_back(v);
    }
  }
  all.push_back(hi);
  if (int64_t(all.size()) <= max_points) return all;
  // Evenly over the list's positions, which are already spread geometrically.
  std::vector<int64_t> out;
  for (int i = 0; i < max_points; ++i) {
    const size_t at = size_t(std::llround(double(i) * double(all.size() - 1) / (max_points - 1)));
    if (out.empty() || all[at] != out.back()) out.push_back(all[at]);
  }
  return out;
}

std::vector<int64_t> check_points(const std::vector<int64_t>& points) {
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const int64_t a = points[i], b = points[i + 1];
    if (b - a < 2) continue;
    const int64_t mid =
        std::clamp<int64_t>(std::llround(std::sqrt(double(a) * double(b))), a + 1, b - 1);
    out.push_back(mid);
  }
  return out;
}

std::vector<DispatchSegment> choose_dispatch(const std::vector<std::vector<double>>& times,
                                             double tolerance) {
  if (times.empty()) throw TaskError("a dispatch table needs at least one candidate");
  const size_t points = times.front().size();
  std::vector<double> best(points, std::numeric_limits<double>::infinity());
  for (const std::vector<double>& row : times) {
    CUTUNE_CHECK(row.size() == points, "a dispatch matrix's rows differ in length");
    for (size_t p = 0; p < points; ++p)
      if (std::isfinite(row[p]) && row[p] > 0) best[p] = std::min(best[p], row[p]);
  }
  for (size_t p = 0; p < points; ++p) {
    if (!std::isfinite(best[p]))
      throw TaskError(fmt::format("no candidate ran at point {} of the range", p + 1));
  }
  auto covers = [&](size_t c, size_t p) {
    const double t = times[c][p];
    return std::isfinite(t) && t > 0 && t <= (1 + tolerance) * best[p];
  };
  // f[j]: the best table of the first j points, as (segments, summed relative time), and the
  // segment that ends it.
  struct State {
    size_t segments = std::numeric_limits<size_t>::max();
    double cost = 0;
    DispatchSegment last;
  };
  std::vector<State> f(points + 1);
  f[0].segments = 0;
  for (size_t j = 1; j <= points; ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (f[i].segments == std::numeric_limits<size_t>::max()) continue;
      for (size_t c = 0; c < times.size(); ++c) {
        double cost = f[i].cost;
        bool ok = true;
        for (size_t p = i; p < j && ok; ++p) {
          ok = covers(c, p);
          if (ok) cost += times[c][p] / best[p];
        }
        if (!ok) continue;
        const size_t segments = f[i].segments + 1;
        // Strictly better only (a relative margin against rounding): the first found wins ties.
        const bool better = segments < f[j].segments ||
                            (segments == f[j].segments && cost < f[j].cost * (1 - 1e-12));
        if (better) f[j] = {segments, cost, {i, j - 1, c}};
      }
    }
  }
  std::vector<DispatchSegment> out;
  for (size_t j = points; j > 0; j = f[j].last.first) out.push_back(f[j].last);
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<MInterval> segment_intervals(const std::vector<DispatchSegment>& segments,
                                         const std::vector<int64_t>& points, int64_t lo,
                                         int64_t hi) {
  std::vector<MInterval> out;
  for (size_t s = 0; s < segments.size(); ++s) {
    const int64_t from = s == 0 ? lo : points[segments[s].first];
    const int64_t to = s + 1 < segments.size() ? points[segments[s + 1].first] - 1 : hi;
    out.push_back({from, to});
  }
  return out;
}

std::optional<size_t> interval_of(const std::vector<MInterval>& intervals, int64_t m) {
  for (size_t i = 0; i < intervals.size(); ++i)
    if (m >= intervals[i].lo && m <= intervals[i].hi) return i;
  return std::nullopt;
}

}  // namespace cutune
