// turbospark: the command-line front end. Usage errors exit with CLI11's non-zero codes (after a
// message and a --help hint), runtime errors (bad files, bad values) with 1.
#include <cstdio>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"TurboSpark: a Mixture-of-Experts-first LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "turbospark 0.1.0");
  ts::cli::add_run_command(app);
  ts::cli::add_chat_command(app);
  ts::cli::add_inspect_command(app);
  ts::cli::add_logits_command(app);
  ts::cli::add_synth_command(app);
  ts::cli::add_pack_command(app);
  ts::cli::add_verify_command(app);
  ts::cli::add_router_replay_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ts::Error& e) {
    std::fprintf(stderr, "turbospark: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "turbospark: error: out of memory\n");
    return 1;
  }
  return 0;
}
