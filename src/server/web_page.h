// The web chat page served at "/": one self-contained HTML file (no CDN, no external fonts, so it
// works offline), compiled into the binary from src/server/web/index.html.
#pragma once
#include <string_view>

namespace ts::server {

std::string_view web_page();

}  // namespace ts::server
