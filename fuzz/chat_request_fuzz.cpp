// Chat rendering from request JSON: bytes that parse as JSON become a request, which is rendered in
// every format; the same bytes as a chat template go through format detection. Invalid JSON is not
// the renderer's business and is skipped; a ts::Error is the only acceptable failure after that.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "chat/chat_template.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ts::chat::detect(text);
  ts::chat::context_for(text, "<s>", "2026-12-02");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const ts::chat::Request req = ts::chat::request_from_json(j);
    const ts::chat::Context ctx{"<s>", "2026-12-02", "You are helpful."};
    for (auto f : {ts::chat::Format::ChatML, ts::chat::Format::Llama3, ts::chat::Format::Gemma, ts::chat::Format::Phi3,
                   ts::chat::Format::Harmony}) {
      try {
        ts::chat::render(f, req, ctx);
      } catch (const ts::Error&) {
      }
    }
  } catch (const ts::Error&) {
  }
  return 0;
}
