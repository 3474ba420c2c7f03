// `turbospark inspect MODEL`: architecture, hyper-parameters, metadata and the tensor table.
#include <map>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "install/manifest.h"
#include "model/family.h"
#include "model/hparams.h"
#include "util/error.h"

namespace ts::cli {
namespace {

std::string human_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// An install directory (turbospark pack): its manifest in brief, then its resident GGUF.
std::string inspect_install(const std::string& dir) {
  const InstallManifest m = read_manifest(dir);
  uint64_t bytes = 0;
  for (const InstallFile& f : m.files) bytes += f.bytes;
  fmt::print("install: {} (format version {}, packed from {}): {} files, {}; {} MoE layers of {} experts, blobs of {}\n",
             dir, m.version, m.source, m.files.size(), human_bytes(bytes), m.layers.size(), m.n_expert,
             m.layers.empty() ? std::string("-") : human_bytes(m.layers.front().blob_bytes));
  return m.path(kResidentName);
}

void inspect(const std::string& model, bool all_metadata) {
  const std::string path = is_install_dir(model) ? inspect_install(model) : model;
  auto g = GgufFile::open(path);
  fmt::print("file: {}\nGGUF version {}, alignment {}, {} metadata entries, {} tensors\n", path, g->version(),
             g->alignment(), g->metadata().size(), g->tensors().size());
  const std::string arch = g->get_string("general.architecture", "?");
  fmt::print("architecture: {}\n", arch);
  try {
    family_for(arch);
    const HParams h = HParams::from_gguf(*g);
    fmt::print("  layers {}  width {}  heads {} (kv {})  head_dim {}  ffn {}  vocab {}  ctx_train {}\n", h.n_layer,
               h.n_embd, h.n_head, h.n_head_kv, h.head_dim, h.n_ff, h.n_vocab, h.n_ctx_train);
    fmt::print("  rope base {}  rot dims {}  rms eps {}", h.rope_base, h.n_rot, h.norm_eps);
    if (h.yarn_factor > 0) fmt::print("  yarn factor {} (orig ctx {})", h.yarn_factor, h.yarn_orig_ctx);
    if (h.sliding_window) fmt::print("  sliding window {}", h.sliding_window);
    fmt::print("\n");
    if (h.is_moe()) fmt::print("  experts {} (top-{})  expert ffn {}\n", h.n_expert, h.n_expert_used, h.n_ff_expert);
  } catch (const Error& e) {
    fmt::print("  (cannot run this model: {})\n", e.what());
  }
  fmt::print("metadata:\n");
  for (const auto& [k, v] : g->metadata()) {
    const bool bulky = k.rfind("tokenizer.ggml.", 0) == 0 && v.type == GgufValueType::ARRAY;
    std::string s = v.to_string(all_metadata || !bulky ? 16 : 3);
    if (!all_metadata && s.size() > 160) s = s.substr(0, 157) + "...";
    for (auto& c : s)
      if (c == '\n') c = ' ';
    fmt::print("  {:<44} {}\n", k, s);
  }
  fmt::print("tensors:\n");
  std::map<std::string, uint64_t> by_type;
  uint64_t total = 0;
  for (const auto& t : g->tensors()) {
    fmt::print("  {:<36} {:<6} [{}] {}\n", t.name, type_name(t.type), fmt::join(t.dims, ", "), human_bytes(t.n_bytes));
    by_type[std::string(type_name(t.type))] += t.n_bytes;
    total += t.n_bytes;
  }
  fmt::print("total: {}", human_bytes(total));
  for (const auto& [t, b] : by_type) fmt::print("  {} {}", t, human_bytes(b));
  fmt::print("\n");
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("inspect", "show a GGUF model's architecture, hyper-parameters, metadata and tensors");
  sub->add_option("model", *path, "GGUF model file or install directory")->required();
  sub->add_flag("--all", *all, "print long metadata values in full");
  sub->callback([path, all] { inspect(*path, *all); });
}

}  // namespace ts::cli
