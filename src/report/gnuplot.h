#pragma once
// Plots are drawn by gnuplot (Debian package gnuplot-nox), run as a child process with its SVG
// terminal; its output is inlined into the report page.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cutune::report {

inline constexpr std::string_view kGnuplotPackage = "gnuplot-nox";

// gnuplot failed on a script (a bug in the report's script, or a broken installation): the
// message holds gnuplot's first error line.
class GnuplotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The first executable "gnuplot" on $PATH; nullopt when there is none.
std::optional<std::filesystem::path> find_gnuplot();

// Runs `gnuplot` on `script` (which must draw to the current output, i.e. not `set output`)
// and returns the SVG it wrote to stdout. Data travels inside the script as datablocks. The
// script and gnuplot's stderr go through a private temporary folder, removed afterwards.
std::string run_gnuplot(const std::filesystem::path& gnuplot, const std::string& script);

// An SVG document made fit to sit inside HTML: the XML prolog and doctype are dropped, and
// every id (and each reference to it) gets `id_prefix`, so that several plots on one page keep
// their ids unique; an id the document repeats gets "-2", "-3", ... on its later copies.
std::string inline_svg(std::string_view svg, std::string_view id_prefix);

// A string literal for a gnuplot script: single-quoted, with ' doubled.
std::string gnuplot_quote(std::string_view text);

}  // namespace cutune::report
