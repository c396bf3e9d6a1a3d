// cutune: the command line. Every command's errors about user input print one line and exit
// with code 2; "no CUDA device found" is one line and exit code 1.

#include <cstdio>
#include <iostream>
#include <system_error>
#include <optional>

#include <CLI/CLI.hpp>

#include "kernels/template.h"
#include "src/base/errors.h"
#include "src/cli/cli_common.h"
#include "src/cli/cmd_spec.h"
#include "src/records/record.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"
#include "src/space/config_space.h"
#ifdef CUTUNE_WITH_MPI
#include <cstring>

#include "src/distributed/mpi_world.h"
#endif

namespace {

constexpr int kExitUsage = 2;

int fail(const std::string& message, int code) {
  std::cout.flush();
  // One write for the whole line: under mpirun a rank's stderr is forwarded in the pieces it
  // was written in, and the abort notice of MPI_Abort below could land between them.
  const std::string line = "cutune: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
#ifdef CUTUNE_WITH_MPI
  cutune::distributed::abort_job(code);  // the other ranks would wait for this one forever
#endif
  return code;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef CUTUNE_WITH_MPI
  // Under mpirun/srun only, and never in a measuring worker (it inherits the rank's
  // environment but is not a rank).
  std::optional<cutune::distributed::MpiSession> mpi;
  if (!(argc > 1 && std::strcmp(argv[1], "__worker") == 0)) mpi.emplace(&argc, &argv);
#endif
  CLI::App app{"cutune: an auto-tuner that writes fast CUDA kernels"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  app.set_version_flag("--version", std::string("cutune ") + CUTUNE_VERSION);
  cutune::cli::add_inspect_commands(app);
  cutune::cli::add_compile_command(app);
  cutune::cli::add_verify_command(app);
  cutune::cli::add_tune_commands(app);
  cutune::cli::add_gpu_commands(app);
  cutune::cli::add_suite_commands(app);
  cutune::cli::add_report_command(app);
  cutune::cli::add_doctor_command(app);
  cutune::cli::add_sass_command(app);
  cutune::cli::add_interop_commands(app);

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      return fail(std::string("unknown command '") + argv[1] + "' (known: " + names + ")",
                  kExitUsage);
    }
  }
  cutune::cli::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad command line";
    return fail(what + " (see cutune --help)", kExitUsage);
  } catch (const cutune::cli::ExitStatus& e) {
    std::cout.flush();
    return e.code;
  } catch (const cutune::UserError& e) {
    return fail(e.what(), kExitUsage);
  } catch (const std::invalid_argument& e) {
    return fail(e.what(), kExitUsage);
  } catch (const std::system_error& e) {
    // The OS refused a file operation (a full disk, a vanished folder): one line, the path in it.
    return fail(e.what(), kExitUsage);
  } catch (const cutune::NoDeviceError& e) {
    return fail(e.what(), 1);
  } catch (const cutune::MissingLibraryError& e) {
    return fail(e.what(), 1);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what(), 1);
  }
  return 0;
}
