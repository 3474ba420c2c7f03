#include "install/packer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "install/manifest.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

// An open file descriptor, closed on destruction.
struct Fd {
  int fd = -1;
  Fd(const std::string& path, int flags, const char* what) : fd(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd < 0) fail("cannot open '{}' ({}): {}", path, what, std::strerror(errno));
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

void read_exact(int fd, const std::string& path, void* buf, uint64_t n, uint64_t off) {
  uint64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, static_cast<uint8_t*>(buf) + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("cannot read '{}' at offset {}: {}", path, off + got, std::strerror(errno));
    if (r == 0) fail("'{}' ends at offset {}, inside a tensor (the file is truncated)", path, off + got);
    got += static_cast<uint64_t>(r);
  }
}

void write_all(int fd, const std::string& path, const void* buf, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, static_cast<const uint8_t*>(buf) + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("cannot write '{}': {}", path, std::strerror(errno));
    done += static_cast<uint64_t>(w);
  }
}

struct ExpertTensors {
  std::array<const GgufTensor*, kExpertParts> t{};
};

// The source's expert tensors per layer, checked to be [.., n_expert] stacks of whole experts.
std::vector<ExpertTensors> find_experts(const GgufFile& g, int64_t n_layer, int64_t n_expert) {
  std::vector<ExpertTensors> layers(n_layer);
  size_t found = 0;
  for (int64_t l = 0; l < n_layer; ++l) {
    for (int p = 0; p < kExpertParts; ++p) {
      const std::string name = expert_tensor_name(l, p);
      const GgufTensor* t = g.find_tensor(name);
      if (!t) {
        if (p < kGateBias || layers[l].t[kGateBias] || (p > kGateBias && layers[l].t[p - 1]))
          fail("'{}': layer {} has no '{}' (every MoE layer needs gate, up and down experts, and biases for all three or none)",
               g.path(), l, name);
        continue;
      }
      if (t->dims.size() != (p < kGateBias ? 3u : 2u) || t->dims.back() != static_cast<uint64_t>(n_expert))
        fail("'{}': tensor '{}' has shape [{}], not a stack of {} experts", g.path(), name, fmt::join(t->dims, ", "), n_expert);
      if (!type_info(t->type).supported) fail("'{}': tensor '{}' has type {}, which TurboSpark cannot compute with", g.path(), name, type_name(t->type));
      layers[l].t[p] = t;
      ++found;
    }
  }
  size_t all = 0;
  for (const GgufTensor& t : g.tensors()) all += is_expert_tensor_name(t.name);
  if (found != all) fail("'{}': {} expert tensors do not belong to a layer 0..{}", g.path(), all - found, n_layer - 1);
  return layers;
}

nlohmann::json hparams_json(const GgufFile& g, const std::string& arch) {
  nlohmann::json j = nlohmann::json::object();
  const std::string prefix = arch + ".";
  for (const auto& [key, v] : g.metadata()) {
    if (!key.starts_with(prefix)) continue;
    const std::string k = key.substr(prefix.size());
    switch (v.type) {
      case GgufValueType::STRING: j[k] = v.s; break;
      case GgufValueType::F32:
      case GgufValueType::F64: j[k] = v.f; break;
      case GgufValueType::BOOL: j[k] = v.i != 0; break;
      case GgufValueType::ARRAY:
        if (!v.floats.empty()) j[k] = v.floats;
        else if (!v.strings.empty()) j[k] = v.strings;
        else j[k] = v.ints;
        break;
      default: j[k] = v.i; break;
    }
  }
  return j;
}

// The source's resident part: every metadata value and every tensor but the experts.
uint64_t write_resident(const GgufFile& g, int in, const std::string& path, Progress* progress, uint64_t& done,
                        const InterruptGuard& interrupt) {
  GgufWriter w(path, g.alignment());
  for (const auto& [key, v] : g.metadata())
    if (key != "general.alignment") w.set(key, v);
  w.set_bool(kResidentCoreKey, true);
  for (const GgufTensor& t : g.tensors())
    if (!is_expert_tensor_name(t.name)) w.add_tensor(t.name, t.type, t.dims);
  w.begin_data();
  std::vector<uint8_t> buf(8u << 20);
  for (const GgufTensor& t : g.tensors()) {
    if (is_expert_tensor_name(t.name)) continue;
    const uint64_t at = g.data_offset() + t.offset;
    for (uint64_t off = 0; off < t.n_bytes; off += buf.size()) {
      const uint64_t n = std::min<uint64_t>(buf.size(), t.n_bytes - off);
      read_exact(in, g.path(), buf.data(), n, at + off);
      w.write(buf.data(), n);
      done += n;
      if (progress) progress->update(done);
      interrupt.check();
    }
    ::posix_fadvise(in, static_cast<off_t>(at), static_cast<off_t>(t.n_bytes), POSIX_FADV_DONTNEED);
  }
  w.finish();
  return fs::file_size(path);
}

}  // namespace

PackResult pack_model(const std::string& gguf_path, const std::string& out_dir, const PackOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto g = GgufFile::open(gguf_path);
  const std::string arch = g->get_string("general.architecture");
  const int64_t n_layer = g->get_int(arch + ".block_count");
  const int64_t n_expert = g->get_int(arch + ".expert_count", 0);
  if (n_expert <= 0)
    fail("'{}' has no routed experts ({}.expert_count): there is nothing to pack; run the GGUF directly", gguf_path, arch);
  if (n_layer <= 0 || static_cast<uint64_t>(n_layer) > g->tensors().size()) fail("'{}': bad {}.block_count {}", gguf_path, arch, n_layer);
  const std::vector<ExpertTensors> experts = find_experts(*g, n_layer, n_expert);

  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    if (!o.force) fail("'{}' exists (pass --force to replace it)", out_dir);
    if (!is_install_dir(out_dir) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
      fail("'{}' exists and is not an install directory: refusing to replace it", out_dir);
  }
  const std::string tmp = out_dir + ".partial";
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp + "/experts", ec) || ec) fail("cannot create '{}': {}", tmp, ec.message());
  // Removes the partial directory unless the pack completes.
  struct Cleanup {
    std::string dir;
    bool keep = false;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(dir, e);
    }
  } cleanup{tmp};

  InstallManifest m;
  m.architecture = arch;
  m.hparams = hparams_json(*g, arch);
  m.source = fs::path(gguf_path).filename().string();
  m.n_expert = n_expert;
  uint64_t total = 0;
  for (const GgufTensor& t : g->tensors()) total += t.n_bytes;

  InterruptGuard interrupt;
  std::unique_ptr<Progress> progress;
  if (o.progress) progress = std::make_unique<Progress>("pack", total);
  uint64_t done = 0;
  Fd in(gguf_path, O_RDONLY, "the model");
  const uint64_t resident_bytes = write_resident(*g, in.fd, tmp + "/" + kResidentName, progress.get(), done, interrupt);
  m.files.push_back(InstallFile{kResidentName, resident_bytes, sha256_file(tmp + "/" + kResidentName)});

  std::vector<uint8_t> blob;
  for (int64_t l = 0; l < n_layer; ++l) {
    const ExpertTensors& et = experts[l];
    InstallLayer il;
    il.layer = l;
    il.file = fmt::format("experts/blk.{}.bin", l);
    std::array<uint64_t, kExpertParts> bytes{};
    for (int p = 0; p < kExpertParts; ++p) {
      const GgufTensor* t = et.t[p];
      if (!t) continue;
      InstallPart& ip = il.parts[p];
      ip.tensor = t->name;
      ip.type = t->type;
      ip.dims.assign(t->dims.begin(), t->dims.end() - 1);
      ip.bytes = bytes[p] = t->n_bytes / static_cast<uint64_t>(n_expert);
    }
    const BlobLayout b = blob_layout(bytes);
    for (int p = 0; p < kExpertParts; ++p) il.parts[p].offset = b.offset[p];
    il.blob_bytes = b.bytes;
    blob.assign(b.bytes, 0);  // the padding between parts stays zero
    const std::string path = tmp + "/" + il.file;
    Fd out(path, O_WRONLY | O_CREAT | O_TRUNC, "an expert file");
    Sha256 hash;
    for (int64_t e = 0; e < n_expert; ++e) {
      for (int p = 0; p < kExpertParts; ++p) {
        if (!bytes[p]) continue;
        const uint64_t at = g->data_offset() + et.t[p]->offset + static_cast<uint64_t>(e) * bytes[p];
        read_exact(in.fd, gguf_path, blob.data() + b.offset[p], bytes[p], at);
        done += bytes[p];
      }
      il.offsets.push_back(static_cast<uint64_t>(e) * b.bytes);
      write_all(out.fd, path, blob.data(), b.bytes);
      hash.update(blob.data(), b.bytes);
      if (progress) progress->update(done);
      interrupt.check();
    }
    // Durable before it is listed, and dropped from the page cache (with the source's slices) so a
    // 12 GB pack does not fill memory with cache.
    if (::fdatasync(out.fd) != 0) fail("cannot write '{}': {}", path, std::strerror(errno));
    ::posix_fadvise(out.fd, 0, 0, POSIX_FADV_DONTNEED);
    for (int p = 0; p < kExpertParts; ++p)
      if (et.t[p])
        ::posix_fadvise(in.fd, static_cast<off_t>(g->data_offset() + et.t[p]->offset), static_cast<off_t>(et.t[p]->n_bytes),
                        POSIX_FADV_DONTNEED);
    m.files.push_back(InstallFile{il.file, static_cast<uint64_t>(n_expert) * b.bytes, hash.hex()});
    m.layers.push_back(std::move(il));
  }
  if (progress) progress->finish();

  const std::string manifest = manifest_json(m);
  {
    Fd f(tmp + "/" + kManifestName, O_WRONLY | O_CREAT | O_TRUNC, "the manifest");
    write_all(f.fd, tmp + "/" + kManifestName, manifest.data(), manifest.size());
    if (::fsync(f.fd) != 0) fail("cannot write '{}/{}': {}", tmp, kManifestName, std::strerror(errno));
  }
  if (fs::exists(out_dir, ec)) fs::remove_all(out_dir, ec);
  fs::rename(tmp, out_dir, ec);
  if (ec) fail("cannot rename '{}' to '{}': {}", tmp, out_dir, ec.message());
  cleanup.keep = true;

  PackResult r;
  for (const InstallFile& f : m.files) r.bytes += f.bytes;
  r.bytes += manifest.size();
  r.moe_layers = static_cast<int64_t>(m.layers.size());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

uint64_t verify_install(const std::string& dir, bool progress_bar) {
  const InstallManifest m = read_manifest(dir);  // sizes are checked here
  uint64_t total = 0;
  for (const InstallFile& f : m.files) total += f.bytes;
  std::unique_ptr<Progress> progress;
  if (progress_bar) progress = std::make_unique<Progress>("verify", total);
  std::vector<std::string> bad;
  uint64_t done = 0;
  std::vector<uint8_t> buf(8u << 20);
  for (const InstallFile& f : m.files) {
    const std::string path = m.path(f.path);
    Fd in(path, O_RDONLY, "install file");
    Sha256 hash;
    for (uint64_t off = 0; off < f.bytes; off += buf.size()) {
      const uint64_t n = std::min<uint64_t>(buf.size(), f.bytes - off);
      read_exact(in.fd, path, buf.data(), n, off);
      hash.update(buf.data(), n);
      done += n;
      if (progress) progress->update(done);
    }
    ::posix_fadvise(in.fd, 0, 0, POSIX_FADV_DONTNEED);
    if (hash.hex() != f.sha256) bad.push_back(f.path);
  }
  if (progress) progress->finish();
  if (!bad.empty())
    fail("install '{}' is damaged: the contents of '{}' do not match the manifest's SHA-256; pack the model again", dir,
         fmt::join(bad, "', '"));
  return done;
}

}  // namespace ts
