#include "cli/reply_printer.h"

#include <cstdio>

#include "util/output_file.h"

namespace ts::cli {

ReplyPrinter::ReplyPrinter(bool harmony, bool show_reasoning)
    : harmony_(harmony ? std::make_unique<chat::HarmonyParser>() : nullptr), show_reasoning_(show_reasoning) {}

bool ReplyPrinter::push(const std::string& piece) {
  if (!harmony_) {
    write_stdout(piece);
    text_ += piece;
    return true;
  }
  for (const auto& ev : harmony_->push(piece)) {
    if (ev.channel == "final") {
      write_stdout(ev.text);
      text_ += ev.text;
    } else if (show_reasoning_) {
      if (ev.channel != last_channel_) std::fprintf(stderr, "\n[%s%s%s]\n", ev.channel.c_str(), ev.recipient.empty() ? "" : " to=", ev.recipient.c_str());
      std::fwrite(ev.text.data(), 1, ev.text.size(), stderr);
    }
    last_channel_ = ev.channel;
  }
  return !harmony_->stopped();
}

}  // namespace ts::cli
