// JSON text as Hugging Face's `tojson` filter writes it (Python json.dumps with ensure_ascii=False):
// ", " and ": " separators, non-ASCII kept as UTF-8. Templates embed this text in prompts, so the
// spacing must match the reference byte for byte. Object keys come out in nlohmann::json's (sorted)
// order, which matches Python only when the caller's keys were sorted.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ts::chat {

std::string python_json(const nlohmann::json& j);

}  // namespace ts::chat
