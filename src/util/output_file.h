// Where a command writes its results. Every command that writes a file goes through OutputFile, so
// the rules hold everywhere:
//  - a regular file (or a path that does not exist yet) is written under a temporary name next to
//    it and renamed over it by commit(): a failed or interrupted write never leaves a truncated file
//    under the requested name, nor destroys the old one;
//  - a symbolic link is followed and its target is what gets replaced (the link stays a link);
//  - a character device or a FIFO is written in place (`-o /dev/null`, `-o /dev/stdout`, a pipe):
//    renaming over it would replace the device node with a regular file;
//  - "-" is standard output, for outputs that are streams;
//  - a directory, a socket or a block device is an error naming what it is.
// Every failed write (a full disk, /dev/full, a closed pipe) is a ts::Error naming the output, so
// nothing can report success after it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

struct OutputOptions {
  bool allow_stdout = true;        // accept "-" for standard output
  // Non-null: an existing regular file is not replaced; the error ends with this hint, e.g.
  // "(pass --force to replace it)".
  const char* keep_existing = nullptr;
};

class OutputFile {
 public:
  OutputFile(const std::string& path, const OutputOptions& opt = {});
  ~OutputFile();  // unless commit() succeeded: removes the temporary file, the target is untouched
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t n);
  // Flushes everything, makes a replacement durable (fsync) and renames it into place.
  void commit();

 private:
  void flush_buffer();

  std::string name_;     // for messages: the path quoted, or "stdout"
  std::string target_;   // the file a temporary replaces on commit()
  std::string writing_;  // the file open for writing (the temporary, for a replacement)
  int fd_ = -1;
  bool temporary_ = false, is_stdout_ = false, committed_ = false;
  unsigned mode_ = 0;  // permissions of the file being replaced (0: a new file)
  std::vector<char> buf_;
  size_t used_ = 0;
};

// Checks `path` by the rules above without creating anything (commands call it before long work,
// so a bad -o fails at once); OutputFile applies the same checks.
void check_output_path(const std::string& path, const OutputOptions& opt = {});

// The whole of `data` to `path` by the rules above.
void write_output_file(const std::string& path, const void* data, size_t n, const OutputOptions& opt = {});

// Text to standard output through stdio (which `run`, `chat` and `inspect` use), flushed; a failed
// write throws. flush_stdout() is what main calls last, so that output buffered by stdio (or by
// std::cout, which shares stdio's buffer) cannot fail unnoticed at exit.
void write_stdout(std::string_view text);
void flush_stdout();

}  // namespace ts
