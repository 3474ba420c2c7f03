// Harmony's "# Tools" section: OpenAI function definitions rendered as the TypeScript-like
// namespace gpt-oss was trained on, following the reference template's macros (including its
// whitespace quirks, which the model saw in training).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ts::chat {

// tools: array of {"type":"function","function":{"name","description","parameters"}}.
std::string harmony_tool_namespace(const nlohmann::json& tools);

}  // namespace ts::chat
