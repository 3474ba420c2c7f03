// Harmony (gpt-oss) prompt rendering. Unlike the turn formats it builds a system header of its own,
// moves the system/developer message into a developer block, and writes assistant turns on channels.
#pragma once
#include "chat/chat_template.h"

namespace ts::chat {

std::string render_harmony(const Request& r, const Context& ctx);

}  // namespace ts::chat
