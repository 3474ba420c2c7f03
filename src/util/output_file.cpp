#include "util/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"
#include "util/input_file.h"

namespace ts {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;

enum class Kind { Stdout, NewFile, Replace, InPlace };

struct Target {
  Kind kind;
  std::string path;  // the file to create or replace (symlinks followed), or to open in place
  unsigned mode = 0; // Replace: the permissions to keep
};

std::string dir_of(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// Follows a chain of symbolic links whose last target does not exist yet (a dangling link names
// the file to create, as `echo > link` does).
std::string follow_dangling(std::string p) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n < 0) fail("cannot read the symbolic link '{}': {}", p, std::strerror(errno));
    const std::string link(buf, static_cast<size_t>(n));
    p = link.starts_with("/") ? link : dir_of(p) + "/" + link;
  }
  fail("'{}': too many levels of symbolic links", p);
}

Target resolve(const std::string& path, const OutputOptions& opt) {
  if (path.empty()) fail("the output path is empty");
  if (path == "-") {
    if (!opt.allow_stdout) fail("this output cannot be written to standard output ('-')");
    return {Kind::Stdout, "-"};
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail("cannot write '{}': {}", path, std::strerror(errno));
    const std::string target = follow_dangling(path);
    struct stat dir {};
    const std::string parent = dir_of(target);
    if (::stat(parent.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
      fail("cannot write '{}': directory '{}' does not exist", path, parent);
    return {Kind::NewFile, target};
  }
  if (S_ISREG(st.st_mode)) {
    if (opt.keep_existing) fail("'{}': file exists {}", path, opt.keep_existing);
    // realpath follows every link, including /proc/self/fd/N for `-o /dev/stdout` redirected to a file.
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real)) fail("cannot resolve '{}': {}", path, std::strerror(errno));
    return {Kind::Replace, real, static_cast<unsigned>(st.st_mode & 07777)};
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {Kind::InPlace, path};
  fail("cannot write '{}': it is {}; write to a regular file, a character device, a FIFO or '-'", path,
       file_kind(st.st_mode));
}

}  // namespace

void check_output_path(const std::string& path, const OutputOptions& opt) { resolve(path, opt); }

OutputFile::OutputFile(const std::string& path, const OutputOptions& opt) : name_(path == "-" ? "stdout" : "'" + path + "'") {
  const Target t = resolve(path, opt);
  target_ = t.path;
  mode_ = t.mode;
  switch (t.kind) {
    case Kind::Stdout:
      std::fflush(stdout);  // anything stdio holds goes first
      fd_ = STDOUT_FILENO;
      is_stdout_ = true;
      writing_ = path;
      break;
    case Kind::InPlace:
      // O_WRONLY on a FIFO waits for a reader, as any writer to a named pipe does.
      fd_ = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail("cannot open '{}' for writing: {}", path, std::strerror(errno));
      writing_ = t.path;
      break;
    case Kind::NewFile:
    case Kind::Replace:
      writing_ = t.path + ".partial";
      fd_ = ::open(writing_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd_ < 0) fail("cannot create '{}': {}", writing_, std::strerror(errno));
      temporary_ = true;
      if (mode_) ::fchmod(fd_, mode_);
      break;
  }
  buf_.resize(kBufferBytes);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0 && !is_stdout_) ::close(fd_);
  if (temporary_ && !committed_) ::unlink(writing_.c_str());
}

void OutputFile::flush_buffer() {
  size_t done = 0;
  const size_t n_buf = used_;
  used_ = 0;
  while (done < n_buf) {
    const ssize_t n = ::write(fd_, buf_.data() + done, n_buf - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write {}: {}", name_, std::strerror(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
}

void OutputFile::write(const void* data, size_t n) {
  if (committed_) fail("internal error: write to {} after it was committed", name_);
  const auto* p = static_cast<const char*>(data);
  while (n) {
    const size_t k = std::min(n, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, k);
    used_ += k;
    p += k;
    n -= k;
    if (used_ == buf_.size()) flush_buffer();
  }
}

void OutputFile::commit() {
  if (committed_) return;
  flush_buffer();
  if (temporary_) {
    if (::fsync(fd_) != 0) fail("cannot write {}: {}", name_, std::strerror(errno));
  }
  if (!is_stdout_) {
    const int r = ::close(fd_);
    fd_ = -1;
    if (r != 0) fail("cannot write {}: {}", name_, std::strerror(errno));
  }
  if (temporary_ && std::rename(writing_.c_str(), target_.c_str()) != 0)
    fail("cannot rename '{}' to '{}': {}", writing_, target_, std::strerror(errno));
  committed_ = true;
}

void write_output_file(const std::string& path, const void* data, size_t n, const OutputOptions& opt) {
  OutputFile f(path, opt);
  f.write(data, n);
  f.commit();
}

void write_stdout(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    const int e = errno;
    std::clearerr(stdout);
    fail("cannot write to stdout: {}", std::strerror(e));
  }
  flush_stdout();
}

void flush_stdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int e = errno;
    std::clearerr(stdout);
    fail("cannot write to stdout: {}", std::strerror(e ? e : EIO));
  }
}

}  // namespace ts
