// `turbospark run`: generate a continuation of a prompt (or, with --chat, a reply to it), text to
// stdout and a one-line speed summary to stderr.
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/instruments.h"
#include "cli/reply_printer.h"
#include "runtime/generator.h"
#include "util/error.h"
#include "util/output_file.h"

namespace ts::cli {
namespace {

struct RunOptions {
  GenerationOptions gen;
  std::string prompt;
  bool chat = false;
  bool special = false;
};

void run(const RunOptions& o) {
  LoadedModel m = load_for_generation(o.gen);
  const Tokenizer& tok = *m.tokenizer;
  std::vector<int32_t> prompt;
  bool harmony = false;
  if (o.chat) {
    const ChatSetup cs = chat_setup(m, o.gen);
    harmony = cs.format == chat::Format::Harmony;
    chat::Request req;
    if (!o.gen.system.empty()) req.messages.push_back({"system", o.gen.system, "", nullptr, ""});
    req.messages.push_back({"user", o.prompt, "", nullptr, ""});
    req.reasoning_effort = o.gen.reasoning_effort;
    // The rendered text carries the BOS (or not) exactly as the template does.
    prompt = tok.encode(chat::render(cs.format, req, cs.context), false, true);
  } else {
    prompt = tok.encode(o.prompt, true, o.special);
  }
  Generator gen(*m.model, *m.backend, tok, o.gen.model.ctx, m.forward_options(o.gen));
  ResidualCapture capture;
  if (!o.gen.steer.capture_path.empty()) gen.capture_next(&capture);
  RunInstruments instruments(o.gen.model, *m.model);
  Sampler sampler = make_sampler(m, o.gen);
  ReplyPrinter out(harmony, o.gen.show_reasoning);
  const GenerationStats st =
      gen.generate(prompt, o.gen.n_predict, sampler, [&](const std::string& piece) { return out.push(piece); });
  // Flushed (and checked) before the summary: the summary on stderr must follow the text, and must
  // not appear at all when the text could not be written.
  write_stdout("\n");
  std::fprintf(stderr, "%s\n", st.summary().c_str());
  instruments.report(st.forward_tokens());
  if (!o.gen.steer.capture_path.empty()) capture.write(o.gen.steer.capture_path);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "generate text from a prompt");
  sub->add_option("-p,--prompt", o->prompt, "the prompt")->required();
  sub->add_flag("--chat", o->chat, "apply the model's chat template and answer the prompt as a user message");
  sub->add_flag("--special", o->special, "parse special-token texts (e.g. <|im_start|>) in a raw prompt");
  add_generation_options(sub, o->gen);
  sub->callback([o] { run(*o); });
}

}  // namespace ts::cli
