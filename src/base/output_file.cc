#include "src/base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "src/base/errors.h"

namespace cutune {
namespace {

namespace fs = std::filesystem;

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

fs::path folder_of(const fs::path& path) {
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

}  // namespace

void check_output(const OutputTarget& target, OutputMode mode) {
  const std::string& flag = target.flag;
  const std::string path = target.path.string();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      throw UserError(fmt::format("{} {}: {}", flag, path, std::strerror(errno)));
    }
    struct stat folder {};
    const fs::path parent = folder_of(target.path);
    if (::stat(parent.c_str(), &folder) != 0 || !S_ISDIR(folder.st_mode)) {
      throw UserError(fmt::format("{} {}: no such folder {}", flag, path, parent.string()));
    }
    return;
  }
  if (S_ISREG(st.st_mode)) {
    if (mode == OutputMode::create && !target.force) {
      throw UserError(fmt::format("{} {} exists; pass --force to replace it", flag, path));
    }
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::string to = fs::read_symlink(target.path, ec).string();
    if (mode == OutputMode::append) {
      throw UserError(fmt::format("{} {} is a symbolic link to {}; name the file itself", flag,
                                  path, to));
    }
    if (!target.force) {
      throw UserError(fmt::format(
          "{} {} is a symbolic link to {}; name the file itself, or pass --force to replace "
          "the link (what it points to is left alone)",
          flag, path, to));
    }
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    throw UserError(fmt::format("{} {} is a directory; name a file", flag, path));
  }
  throw UserError(
      fmt::format("{} {} is {}, not a regular file; name a file", flag, path, kind_of(st.st_mode)));
}

AtomicOutput::AtomicOutput(OutputTarget target) : target_(std::move(target)) {
  check_output(target_, OutputMode::create);
  static std::atomic<unsigned> counter{0};
  const fs::path folder = folder_of(target_.path);
  const std::string name = target_.path.filename().string();
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = folder / fmt::format(".{}.{}-{}.tmp", name, ::getpid(), counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      throw UserError(fmt::format("{} {}: cannot create a file in {}: {}", target_.flag,
                                  target_.path.string(), folder.string(), std::strerror(errno)));
    }
  }
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicOutput::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, fmt::format("cannot write {}", target_.path.string()));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicOutput::commit() {
  if (::fsync(fd_) != 0) throw_errno(errno, fmt::format("cannot write {}", target_.path.string()));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw_errno(errno, fmt::format("cannot write {}", target_.path.string()));
  // What was checked on construction may have changed while the contents were made.
  check_output(target_, OutputMode::create);
  if (::rename(temp_.c_str(), target_.path.c_str()) != 0) {
    throw_errno(errno, fmt::format("cannot write {}", target_.path.string()));
  }
  committed_ = true;
}

void write_output_file(const OutputTarget& target, std::string_view contents) {
  AtomicOutput out(target);
  out.write(contents);
  out.commit();
}

}  // namespace cutune
