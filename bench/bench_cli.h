#pragma once
// The bench programs' command lines, parsed by CLI11 as cutune's own commands are: a bad flag or
// value is one line on stderr ("PROGRAM: what is wrong") and exit code 2; --help prints the usage
// and exits 0.

#include <exception>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace cutune::bench {

// A validator for numbers that must be greater than 0 (CLI11's PositiveNumber prints the
// whole double range in its message).
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double x = std::stod(text, &used);
          if (used == text.size() && x > 0) return {};
        } catch (const std::exception&) {
        }
        return "a number greater than 0, not '" + text + "'";
      },
      "POSITIVE");
}

// A validator that accepts what `parse` (a project function that throws std::invalid_argument
// on a bad name, such as parse_tuner_kind) accepts, with its message otherwise: the names stay
// listed in one place.
template <typename Parse>
CLI::Validator accepted_by(Parse parse, const std::string& what) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      what);
}

// Parses argv into the options bound on `app`. Returns -1 when the program goes on, else the
// exit code it should return at once.
inline int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {} (see {} --help)\n", app.get_name(), e.what(), app.get_name());
    return 2;
  }
}

}  // namespace cutune::bench
