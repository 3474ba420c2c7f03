// `turbospark fetch NAME`: downloads a known real model into the cache (the same directory the
// default model and the real-model tests use) and prints its path.
#include "cli/commands.h"
#include "runtime/model_cache.h"
#include "util/output_file.h"

namespace ts::cli {

void add_fetch_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  std::string names;
  for (const KnownModel& m : known_models()) names += (names.empty() ? "" : ", ") + m.name;
  auto* sub = app.add_subcommand("fetch", "download a known model into the cache (" + cache_dir() + "/models) and print its path");
  sub->add_option("name", *name, "one of: " + names)->required();
  sub->callback([name] { write_stdout(fetch_model(known_model(*name)) + "\n"); });
}

}  // namespace ts::cli
