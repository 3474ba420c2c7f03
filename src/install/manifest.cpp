#include "install/manifest.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace ts {
namespace {

// A supported tensor type by name (the manifest stores names, as `inspect` prints them).
GgmlType type_from_name(const std::string& name, const std::string& where) {
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const auto ti = type_info(raw);
    if (ti && ti->name == name && ti->supported) return static_cast<GgmlType>(raw);
  }
  fail("{}: '{}' is not a tensor type TurboSpark computes with", where, name);
}

uint64_t file_size_of(const std::string& path, const std::string& dir, const std::string& rel) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    fail("install '{}' is incomplete: '{}' is missing (pack it again)", dir, rel);
  return static_cast<uint64_t>(st.st_size);
}

// A relative path inside the install: no absolute paths and no "..", so a manifest can only name
// files under its own directory.
void check_relative(const std::string& rel, const std::string& where) {
  const std::filesystem::path p(rel);
  if (rel.empty() || p.is_absolute()) fail("{}: '{}' is not a relative path", where, rel);
  for (const auto& part : p)
    if (part == "..") fail("{}: '{}' leaves the install directory", where, rel);
}

uint64_t part_bytes(const InstallPart& p) {
  return checked_mul(row_bytes(p.type, p.dims[0]), p.dims.size() > 1 ? p.dims[1] : 1, "expert part");
}

}  // namespace

bool is_install_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(path + "/" + kManifestName, ec);
}

std::string manifest_json(const InstallManifest& m) {
  nlohmann::json j;
  j["format"] = "turbospark-install";
  j["version"] = m.version;
  j["architecture"] = m.architecture;
  j["hparams"] = m.hparams;
  j["source"] = m.source;
  j["resident"] = kResidentName;
  nlohmann::json layers = nlohmann::json::array();
  for (const InstallLayer& l : m.layers) {
    nlohmann::json parts = nlohmann::json::array();
    for (int p = 0; p < kExpertParts; ++p) {
      const InstallPart& ip = l.parts[p];
      if (!ip.bytes) continue;
      parts.push_back({{"part", expert_part_name(p)}, {"tensor", ip.tensor}, {"type", std::string(type_name(ip.type))},
                       {"dims", ip.dims}, {"offset", ip.offset}, {"bytes", ip.bytes}});
    }
    layers.push_back({{"layer", l.layer}, {"file", l.file}, {"blob_bytes", l.blob_bytes}, {"parts", parts}, {"offsets", l.offsets}});
  }
  j["experts"] = {{"count", m.n_expert}, {"alignment", kBlobAlign}, {"layers", layers}};
  nlohmann::json files = nlohmann::json::array();
  for (const InstallFile& f : m.files) files.push_back({{"path", f.path}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  j["files"] = files;
  return j.dump(1) + "\n";
}

InstallManifest read_manifest(const std::string& dir) {
  const std::string mpath = dir + "/" + kManifestName;
  std::ifstream in(mpath, std::ios::binary);
  if (!in) fail("cannot open '{}'", mpath);
  std::stringstream ss;
  ss << in.rdbuf();
  InstallManifest m;
  m.dir = dir;
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    if (j.at("format").get<std::string>() != "turbospark-install") fail("'{}' is not a TurboSpark install manifest", mpath);
    m.version = j.at("version").get<int>();
    if (m.version != kInstallVersion)
      fail("'{}' is install format version {}; this TurboSpark reads version {} (pack the model again)", mpath, m.version, kInstallVersion);
    m.architecture = j.at("architecture").get<std::string>();
    m.hparams = j.at("hparams");
    m.source = j.at("source").get<std::string>();
    if (j.at("resident").get<std::string>() != kResidentName) fail("'{}': unexpected resident file name", mpath);
    const nlohmann::json& ex = j.at("experts");
    m.n_expert = ex.at("count").get<int64_t>();
    if (m.n_expert < 1 || m.n_expert > (1 << 20)) fail("'{}': bad expert count {}", mpath, m.n_expert);
    if (ex.at("alignment").get<uint64_t>() != kBlobAlign) fail("'{}': unsupported blob alignment", mpath);
    for (const nlohmann::json& f : j.at("files")) {
      InstallFile file{f.at("path").get<std::string>(), f.at("bytes").get<uint64_t>(), f.at("sha256").get<std::string>()};
      check_relative(file.path, mpath);
      m.files.push_back(std::move(file));
    }
    for (const nlohmann::json& lj : ex.at("layers")) {
      InstallLayer l;
      l.layer = lj.at("layer").get<int64_t>();
      l.file = lj.at("file").get<std::string>();
      check_relative(l.file, mpath);
      l.blob_bytes = lj.at("blob_bytes").get<uint64_t>();
      l.offsets = lj.at("offsets").get<std::vector<uint64_t>>();
      for (const nlohmann::json& pj : lj.at("parts")) {
        const std::string name = pj.at("part").get<std::string>();
        int p = 0;
        while (p < kExpertParts && name != expert_part_name(p)) ++p;
        if (p == kExpertParts) fail("'{}': unknown expert part '{}'", mpath, name);
        InstallPart& ip = l.parts[p];
        ip.tensor = pj.at("tensor").get<std::string>();
        ip.type = type_from_name(pj.at("type").get<std::string>(), mpath);
        ip.dims = pj.at("dims").get<std::vector<uint64_t>>();
        if (ip.dims.empty() || ip.dims.size() > 2 || ip.dims[0] % type_info(ip.type).block_elems)
          fail("'{}': layer {} part {} has dims that do not fit its type", mpath, l.layer, name);
        ip.offset = pj.at("offset").get<uint64_t>();
        ip.bytes = pj.at("bytes").get<uint64_t>();
      }
      m.layers.push_back(std::move(l));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("'{}' is not a valid install manifest: {}", mpath, e.what());
  }

  // Every file exists with its recorded size; every blob lies inside its file, laid out exactly as
  // blob_layout() places the parts (the reader computes offsets with the same function).
  for (const InstallFile& f : m.files) {
    const uint64_t size = file_size_of(m.path(f.path), dir, f.path);
    if (size != f.bytes)
      fail("install '{}' is damaged: '{}' is {} bytes, the manifest says {} (truncated or altered; run `turbospark verify {}`)",
           dir, f.path, size, f.bytes, dir);
  }
  auto recorded = [&](const std::string& rel) -> const InstallFile& {
    for (const InstallFile& f : m.files)
      if (f.path == rel) return f;
    fail("'{}': '{}' is not listed among the files", mpath, rel);
  };
  recorded(kResidentName);
  for (const InstallLayer& l : m.layers) {
    const InstallFile& f = recorded(l.file);
    std::array<uint64_t, kExpertParts> bytes{};
    for (int p = 0; p < kExpertParts; ++p) bytes[p] = l.parts[p].bytes;
    const BlobLayout b = blob_layout(bytes);
    if (!l.parts[kGate].bytes || !l.parts[kUp].bytes || !l.parts[kDown].bytes)
      fail("'{}': layer {} lacks a gate, up or down part", mpath, l.layer);
    if (b.bytes != l.blob_bytes) fail("'{}': layer {} blobs are {} bytes, their parts need {}", mpath, l.layer, l.blob_bytes, b.bytes);
    for (int p = 0; p < kExpertParts; ++p)
      if (l.parts[p].bytes && (l.parts[p].offset != b.offset[p] || part_bytes(l.parts[p]) != l.parts[p].bytes))
        fail("'{}': layer {} part {} is not laid out as this version expects", mpath, l.layer, expert_part_name(p));
    if (static_cast<int64_t>(l.offsets.size()) != m.n_expert)
      fail("'{}': layer {} lists {} experts, not {}", mpath, l.layer, l.offsets.size(), m.n_expert);
    for (uint64_t off : l.offsets)
      if (off % kBlobAlign || off > f.bytes || f.bytes - off < l.blob_bytes)
        fail("'{}': layer {} has an expert at offset {}, outside '{}' or not 4 KiB aligned", mpath, l.layer, off, l.file);
  }
  return m;
}

}  // namespace ts
