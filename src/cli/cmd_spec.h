#pragma once
// The `--spec SPEC.json` forms of space / show / compile / verify / tune / bench, and the
// interoperability commands `cache` and `export --t4` (cmd_spec.cc, cmd_interop.cc).

namespace CLI {
class App;
}

namespace cutune::cli {

// Whether argv is `cutune COMMAND ... --spec ...` for a command that takes a spec, or
// `cutune export ... --t4 ...`.
bool spec_requested(int argc, char** argv);
// Runs that command (or `export LOG --t4 --out FILE`); errors as UserError (exit 2). Returns
// the exit code.
int run_spec_command(int argc, char** argv);
// `cutune cache LOG --out FILE`.
void add_interop_commands(CLI::App& app);

}  // namespace cutune::cli
