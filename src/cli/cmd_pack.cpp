// `turbospark pack MODEL.gguf -o DIR`: writes an install directory (the resident tensors, and every
// expert as one aligned blob, read in one go when streaming; install/manifest.h).
#include <cstdio>

#include "cli/commands.h"
#include "install/packer.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct PackArgs {
  std::string model, out;
  bool force = false;
};

}  // namespace

void add_pack_command(CLI::App& app) {
  auto a = std::make_shared<PackArgs>();
  auto* sub = app.add_subcommand("pack", "write an install directory: resident tensors plus one file of aligned expert blobs per MoE layer");
  sub->add_option("model", a->model, "GGUF MoE model")->required();
  sub->add_option("-o,--output", a->out, "install directory to create")->required();
  sub->add_flag("--force", a->force, "replace an existing install directory");
  sub->callback([a] {
    const PackResult r = pack_model(a->model, a->out, {.force = a->force, .progress = true});
    std::fprintf(stderr, "pack: wrote %s: %lld MoE layers, %.1f MiB in %.1f s\n", a->out.c_str(),
                 static_cast<long long>(r.moe_layers), static_cast<double>(r.bytes) / (1024.0 * 1024.0), r.seconds);
  });
}

}  // namespace ts::cli
