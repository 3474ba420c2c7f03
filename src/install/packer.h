// `turbospark pack`: a GGUF MoE model to an install directory (install/manifest.h). Streaming: the
// model is read and written a piece at a time (pread into a buffer of one expert, page cache
// dropped behind), so packing a 12 GB model takes little memory. The directory is built as
// OUT.partial and renamed when complete, so an interrupted pack never leaves a half install.
#pragma once
#include <cstdint>
#include <string>

namespace ts {

struct PackOptions {
  bool force = false;     // replace an existing install directory
  bool progress = false;  // a progress bar (a line every few seconds when stderr is not a terminal)
};

struct PackResult {
  uint64_t bytes = 0;  // written, all files
  int64_t moe_layers = 0;
  double seconds = 0;
};

PackResult pack_model(const std::string& gguf_path, const std::string& out_dir, const PackOptions& o);

// Re-hashes every file of an install; a missing, truncated or altered file is an error naming it
// (all bad files are listed). Returns the bytes hashed.
uint64_t verify_install(const std::string& dir, bool progress);

}  // namespace ts
