// `turbospark verify DIR`: re-hashes an install directory; a missing, truncated or altered file is an
// error naming it.
#include <cstdio>

#include "cli/commands.h"
#include "install/packer.h"
#include "util/error.h"

namespace ts::cli {

void add_verify_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("verify", "re-hash an install directory's files against its manifest");
  sub->add_option("dir", *dir, "install directory (turbospark pack)")->required();
  sub->callback([dir] {
    const uint64_t bytes = verify_install(*dir, true);
    std::printf("%s: ok (%.1f MiB hashed, every file matches its manifest)\n", dir->c_str(), static_cast<double>(bytes) / (1024.0 * 1024.0));
  });
}

}  // namespace ts::cli
