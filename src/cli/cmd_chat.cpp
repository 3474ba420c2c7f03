// `turbospark chat`: an interactive conversation on stdin/stdout. Each turn re-renders the whole
// conversation with the chat template; the generator reuses the cached prefix, so only the new
// turn is prefilled. "/reset" starts over, "/exit" or end of input quits.
#include <iostream>

#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/instruments.h"
#include "cli/reply_printer.h"
#include "runtime/generator.h"
#include "util/error.h"
#include "util/output_file.h"

namespace ts::cli {
namespace {

void chat_loop(const GenerationOptions& o) {
  LoadedModel m = load_for_generation(o);
  const Tokenizer& tok = *m.tokenizer;
  const ChatSetup cs = chat_setup(m, o);
  Generator gen(*m.model, *m.backend, tok, o.model.ctx, m.forward_options(o));
  ResidualCapture capture;  // one snapshot per turn, at the turn's last prompt token
  RunInstruments instruments(o.model, *m.model);
  int64_t tokens = 0;
  Sampler sampler = make_sampler(m, o);
  chat::Request req;
  req.reasoning_effort = o.reasoning_effort;
  auto reset = [&] {
    req.messages.clear();
    if (!o.system.empty()) req.messages.push_back({"system", o.system, "", nullptr, ""});
  };
  reset();
  std::fprintf(stderr, "chat with %s (%s format); /reset to start over, /exit or Ctrl-D to quit\n",
               m.model->gguf().path().c_str(), std::string(chat::format_name(cs.format)).c_str());
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit") break;
    if (line == "/reset") {
      reset();
      continue;
    }
    if (line.empty()) continue;
    req.messages.push_back({"user", line, "", nullptr, ""});
    const std::vector<int32_t> prompt = tok.encode(chat::render(cs.format, req, cs.context), false, true);
    ReplyPrinter out(cs.format == chat::Format::Harmony, o.show_reasoning);
    if (!o.steer.capture_path.empty()) gen.capture_next(&capture);
    const GenerationStats st =
        gen.generate(prompt, o.n_predict, sampler, [&](const std::string& piece) { return out.push(piece); });
    write_stdout("\n");
    std::fprintf(stderr, "[%s]\n", st.summary().c_str());
    tokens += st.forward_tokens();
    req.messages.push_back({"assistant", out.text(), "", nullptr, ""});
    if (!o.steer.capture_path.empty()) capture.write(o.steer.capture_path);
  }
  instruments.report(tokens);
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto o = std::make_shared<GenerationOptions>();
  auto* sub = app.add_subcommand("chat", "interactive chat using the model's chat template");
  add_generation_options(sub, *o);
  sub->callback([o] { chat_loop(*o); });
}

}  // namespace ts::cli
