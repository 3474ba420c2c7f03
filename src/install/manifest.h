// The install directory written by `turbospark pack`: manifest.json, the resident tensors as a GGUF,
// and one file per MoE layer holding its experts as 4 KiB-aligned blobs (install/expert_layout.h).
// The manifest records the format version, the architecture and hyper-parameters, where each
// expert and part is, and every file's size and SHA-256. Reading an install checks its structure
// and every file's size (a truncated install is refused naming the file); `turbospark verify`
// re-hashes the contents.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "install/expert_layout.h"
#include "quant/types.h"

namespace ts {

inline constexpr int kInstallVersion = 1;
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kResidentName = "resident.gguf";
// Metadata key set in the resident GGUF, so that opening it alone says to open the directory.
inline constexpr const char* kResidentCoreKey = "turbospark.install.resident_core";

struct InstallPart {
  std::string tensor;          // the GGUF tensor it came from (one slice of it per expert)
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> dims;  // one expert's dims, ggml order
  uint64_t offset = 0;         // inside the blob
  uint64_t bytes = 0;          // 0: absent
};

struct InstallLayer {
  int64_t layer = 0;
  std::string file;            // relative to the directory
  uint64_t blob_bytes = 0;
  std::array<InstallPart, kExpertParts> parts;
  std::vector<uint64_t> offsets;  // of each expert's blob in the file
};

struct InstallFile {
  std::string path;  // relative to the directory
  uint64_t bytes = 0;
  std::string sha256;
};

struct InstallManifest {
  std::string dir;  // where it was read from
  int version = kInstallVersion;
  std::string architecture;
  nlohmann::json hparams;  // the source GGUF's "<arch>.*" metadata, keys without the prefix
  std::string source;      // the GGUF it was packed from (file name only)
  int64_t n_expert = 0;
  std::vector<InstallLayer> layers;  // MoE layers only
  std::vector<InstallFile> files;
  std::string path(const std::string& rel) const { return dir + "/" + rel; }
};

// A directory holding manifest.json.
bool is_install_dir(const std::string& path);
// Parses and checks the manifest: a bad or unsupported manifest, a missing file or one whose size
// differs from the manifest (truncated, extended) is an error naming it.
InstallManifest read_manifest(const std::string& dir);
std::string manifest_json(const InstallManifest& m);

}  // namespace ts
