#pragma once
// The files cutune writes at a path a user named (`--out`, `--log`): what may already be there,
// and writing so that no reader ever sees half a file and nothing but a regular file is
// replaced.
//
// What a target path may be:
//   - nothing: it is created (its folder must exist);
//   - a regular file: OutputMode::create replaces it only with `force`; OutputMode::append (a
//     tuning log that a resumed run continues) appends to it;
//   - a symbolic link: never followed. OutputMode::create refuses it, naming where it points,
//     unless `force`, which replaces the link itself with the new file and leaves what it
//     pointed to alone. OutputMode::append always refuses it (name the file it points to);
//   - anything else (a directory, a FIFO, a device such as /dev/null, a socket): refused, even
//     with `force`.
// Every refusal is a UserError of one line that names the option and the path.

#include <filesystem>
#include <string>
#include <string_view>

namespace cutune {

enum class OutputMode {
  create,  // the file is written whole (replaced with force)
  append,  // records are appended to the file, which may exist
};

struct OutputTarget {
  std::filesystem::path path;
  std::string flag = "--out";  // the option that named it, for messages
  bool force = false;          // replace an existing file or symbolic link (OutputMode::create)
};

// UserError when `target` may not be written in `mode` (the rules above), or its folder does
// not exist.
void check_output(const OutputTarget& target, OutputMode mode);

// A new file written beside its target (same folder, a name no other writer uses, mode
// 0666 & ~umask) and renamed over it by commit(), so a reader sees the old file or the new one
// whole. The target is checked (OutputMode::create) on construction and again just before the
// rename: only a regular file (or, with force, a symbolic link) or nothing is ever replaced.
// Until commit() succeeds the temporary file is removed on destruction. Move-less: it owns a
// file descriptor and a path on disk.
class AtomicOutput {
 public:
  explicit AtomicOutput(OutputTarget target);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // The temporary file, for a writer that opens it itself (it exists and is empty at first).
  const std::filesystem::path& temp_path() const { return temp_; }
  // Appends to the temporary file; std::system_error when the OS refuses (disk full).
  void write(std::string_view bytes);
  // Syncs the temporary file and renames it over the target (UserError if the target has since
  // become something that may not be replaced; std::system_error if the OS refuses).
  void commit();

 private:
  OutputTarget target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// check_output(target, create) and `contents` written through an AtomicOutput.
void write_output_file(const OutputTarget& target, std::string_view contents);

}  // namespace cutune
