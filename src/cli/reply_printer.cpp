#include "cli/reply_printer.h"

#include <cstdio>

#include "util/output_file.h"

namespace ts::cli {

ReplyPrinter::ReplyPrinter(const Tokenizer& tok, bool harmony, bool show_reasoning)
    : decoder_(tok), harmony_(harmony ? std::make_unique<chat::HarmonyParser>() : nullptr), show_reasoning_(show_reasoning) {}

void ReplyPrinter::emit(const std::string& piece) {
  if (!harmony_) {
    write_stdout(piece);
    text_ += piece;
    return;
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
}

bool ReplyPrinter::push(int32_t id) {
  emit(decoder_.push(id));
  return !(harmony_ && harmony_->stopped());
}

void ReplyPrinter::finish() { emit(decoder_.flush()); }

}  // namespace ts::cli
