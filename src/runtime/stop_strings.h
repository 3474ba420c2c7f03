// Stop strings over streamed text: text that could still turn out to be the start of a stop string
// is held back until it cannot, so a stop string is never half-streamed, and the text ends just
// before the first stop string found. Used on the detokenized stream (runtime/text_stream.h) and by
// the server on a Harmony reply's visible channel.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ts {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stop);

  // The text that became final with this piece (may be empty). After a stop string was found,
  // further pieces give nothing.
  std::string push(std::string_view piece);
  // The held-back rest at the end of the text.
  std::string flush();
  bool stopped() const { return stopped_; }
  bool empty() const { return stop_.empty(); }

 private:
  std::string release(bool final);

  std::vector<std::string> stop_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace ts
