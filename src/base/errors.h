#pragma once
// The two kinds of error that are exceptions (the third kind, a candidate kernel that fails,
// is a result with a status, never an exception):
// - UserError: bad input from a user (unknown operator, impossible shape, malformed
//   configuration, spec, cache or log line, bad flag). Its message is one line that says what
//   was wrong and what is accepted; the command line prints it and exits with code 2. The
//   more specific kinds (TaskError, ConfigError, RecordError, ...) derive from it.
// - InternalError: a bug in cutune, raised by CUTUNE_CHECK with the file, the line and the
//   condition as text.

#include <stdexcept>
#include <string>

namespace cutune {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] inline void throw_internal_error(const char* file, int line, const char* condition,
                                              const std::string& what) {
  throw InternalError("internal error at " + std::string(file) + ":" + std::to_string(line) + ": " +
                      condition + (what.empty() ? "" : ": " + what));
}

}  // namespace cutune

// Checks an invariant of cutune's own code; `what` (a std::string expression) is evaluated
// only when the check fails.
#define CUTUNE_CHECK(condition, what)                                                         \
  do {                                                                                        \
    if (!(condition)) ::cutune::throw_internal_error(__FILE__, __LINE__, #condition, (what)); \
  } while (false)
