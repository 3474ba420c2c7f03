// turbospark: the command-line front end. Usage errors exit with CLI11's non-zero codes (after a
// message and a --help hint); every other failure (bad files, bad values, failed writes, any
// exception at all) prints "turbospark: error: ..." and exits 1. Nothing may end the process with a
// signal or a bare std::terminate: a message and an exit code are what scripts can act on.
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "util/error.h"
#include "util/output_file.h"

namespace {

int run(int argc, char** argv) {
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
  ts::cli::add_bench_command(app);
  ts::cli::add_serve_command(app);
  ts::cli::add_fetch_command(app);
  int code = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    code = app.exit(e);
  }
  // Output still in stdio's buffer (inspect's tables, --help) is written here; a failure is an error
  // like any other, never a silent exit 0.
  ts::flush_stdout();
  return code;
}

int error(const char* what) {
  std::fprintf(stderr, "turbospark: error: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe must surface as EPIPE from write(), reported with a message, not as a silent
  // death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run(argc, argv);
  } catch (const ts::Error& e) {
    return error(e.what());
  } catch (const std::bad_alloc&) {
    return error("out of memory");
  } catch (const std::exception& e) {
    return error(e.what());
  } catch (...) {
    return error("unexpected exception of unknown type");
  }
}
