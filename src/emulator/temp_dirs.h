#pragma once
// Temporary directories that must not outlive the process: removed by their owner normally,
// and otherwise at exit (atexit) or when the process is ended by SIGINT, SIGTERM or SIGHUP (a
// handler that removes them, then lets the signal do what it did before: the previous handler,
// or the default action). A signal that was ignored stays ignored. The handler is put back at
// each registration if something replaced it meanwhile. Only the registering process removes
// a directory (not a fork of it). SIGKILL cannot be caught: its directories stay.

#include <filesystem>

namespace cutune::emu {

// Up to 64 at a time; more are simply not removed on a signal (still by their owner).
void register_temp_dir(const std::filesystem::path& dir);
void unregister_temp_dir(const std::filesystem::path& dir);

// For a forked child that shares the parent's directories: its signals must not remove them.
void forget_temp_dirs_in_child();

}  // namespace cutune::emu
