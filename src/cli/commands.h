// Each subcommand lives in its own cmd_<name>.cpp and registers itself on the CLI11 app; its
// callback does the work and throws ts::Error on failure (main prints it and exits 1).
#pragma once
#include <CLI/CLI.hpp>

namespace ts::cli {

void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_pack_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_router_replay_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_fetch_command(CLI::App& app);

}  // namespace ts::cli
