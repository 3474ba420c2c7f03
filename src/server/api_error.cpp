#include "server/api_error.h"

namespace ts::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", what()},
                      {"type", status >= 500 ? "server_error" : "invalid_request_error"},
                      {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return {{"error", e}};
}

}  // namespace ts::server
