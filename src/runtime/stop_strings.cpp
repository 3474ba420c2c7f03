#include "runtime/stop_strings.h"

#include <algorithm>

namespace ts {

StopStrings::StopStrings(std::vector<std::string> stop) : stop_(std::move(stop)) {
  std::erase(stop_, std::string());  // an empty stop string would match before any text
}

std::string StopStrings::push(std::string_view piece) {
  if (stopped_) return {};
  held_ += piece;
  return release(false);
}

std::string StopStrings::flush() { return stopped_ ? std::string() : release(true); }

std::string StopStrings::release(bool final) {
  // The earliest complete stop string ends the text.
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    std::string out = held_.substr(0, cut);
    held_.clear();
    stopped_ = true;
    return out;
  }
  // Otherwise hold back the longest tail that a stop string starts with. Stop strings are whole
  // UTF-8 text, so the tail starts on a character boundary.
  size_t keep = 0;
  if (!final)
    for (const auto& s : stop_)
      for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
        if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace ts
