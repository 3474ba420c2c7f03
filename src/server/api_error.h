// Errors answered to an API client, in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}
// Bad input is always one of these with a 4xx status naming the parameter; a 500 means a bug or an
// engine failure, never something the client sent.
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ts::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string param, code;

  // OpenAI's error types: invalid_request_error (4xx), server_error (5xx).
  nlohmann::json to_json() const;
};

// 400 naming the parameter.
template <typename... Args>
[[noreturn]] void bad_param(const std::string& param, fmt::format_string<Args...> f, Args&&... args) {
  throw ApiError(400, fmt::format(f, std::forward<Args>(args)...), param);
}

}  // namespace ts::server
