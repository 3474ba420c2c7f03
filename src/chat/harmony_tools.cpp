// TypeScript-like rendering of JSON-schema tool parameters (see harmony_tools.h). Each branch
// mirrors one branch of the reference template's render_typescript_type / render_tool_namespace.
#include "chat/harmony_tools.h"

#include "chat/python_json.h"
#include "util/error.h"

namespace ts::chat {
namespace {

using nlohmann::json;

// Jinja truthiness: missing, null, false, 0, "" and empty containers are false.
bool truthy(const json& j, std::string_view key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number()) return it->get<double>() != 0;
  return !it->empty() && !(it->is_string() && it->get_ref<const std::string&>().empty());
}

bool type_is(const json& spec, std::string_view type) {
  auto it = spec.find("type");
  return it != spec.end() && it->is_string() && *it == type;
}

// Scalars as Jinja prints them when concatenated: strings raw, anything else as JSON.
std::string text_of(const json& j) { return j.is_string() ? j.get<std::string>() : python_json(j); }

std::string string_field(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() ? text_of(*it) : std::string();
}

// A schema list ("enum", "oneOf", "type" as a union) that the template iterates: anything but an
// array is an error (Jinja would iterate a string's characters or an object's keys).
const json& list_field(const json& spec, const char* key) {
  const json& list = spec[key];
  if (!list.is_array()) fail("chat request: a tool parameter's \"{}\" must be an array, got {}", key, list.dump());
  return list;
}

std::string join(const json& list, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) out += (i ? std::string(sep) : "") + text_of(list[i]);
  return out;
}

bool is_required(const json& parent, const std::string& name) {
  auto it = parent.find("required");
  if (it == parent.end() || !it->is_array()) return false;
  for (const json& r : *it)
    if (r.is_string() && r == name) return true;
  return false;
}

std::string typescript_type(const json& spec) {
  if (!spec.is_object()) return "any";
  std::string nullable = truthy(spec, "nullable") ? " | null" : "";
  if (type_is(spec, "array")) {
    if (!truthy(spec, "items")) return "any[]" + nullable;
    const json& items = spec["items"];
    if (type_is(items, "string")) return "string[]" + nullable;
    if (type_is(items, "number") || type_is(items, "integer")) return "number[]" + nullable;
    if (type_is(items, "boolean")) return "boolean[]" + nullable;
    std::string inner = typescript_type(items);
    return (inner == "object | object" || inner.size() > 50 ? "any[]" : inner + "[]") + nullable;
  }
  if (spec.contains("type") && spec["type"].is_array() && !spec["type"].empty())
    return join(spec["type"], " | ");
  if (truthy(spec, "oneOf")) {
    // The template means to print "any" for unions with object variants, but its flag is set
    // inside a Jinja loop scope and never escapes it, so every union is spelled out.
    const json& variants = list_field(spec, "oneOf");
    std::string out;
    for (size_t i = 0; i < variants.size(); ++i) {
      const json& v = variants[i];
      out += typescript_type(v);
      if (truthy(v, "description")) out += "// " + string_field(v, "description");
      if (v.is_object() && v.contains("default"))
        out += std::string(20, ' ') + "// default: " + python_json(v["default"]);
      if (i + 1 < variants.size()) out += " | \n";
    }
    return out;
  }
  if (type_is(spec, "string"))
    return truthy(spec, "enum") ? "\"" + join(list_field(spec, "enum"), "\" | \"") + "\"" : "string" + nullable;
  if (type_is(spec, "number") || type_is(spec, "integer")) return "number";
  if (type_is(spec, "boolean")) return "boolean";
  if (type_is(spec, "object")) {
    if (!truthy(spec, "properties") || !spec["properties"].is_object()) return "object";
    std::string out = "{\n";
    bool first = true;
    for (const auto& [name, prop] : spec["properties"].items()) {
      if (!first) out += ", ";
      first = false;
      // The reference template leaves a newline and indentation before nested property types.
      out += name + (is_required(spec, name) ? "" : "?") + ": \n" + std::string(16, ' ') +
             typescript_type(prop);
    }
    return out + "}";
  }
  return "any";
}

std::string parameter_line(const json& params, const std::string& name, const json& spec) {
  std::string out;
  if (truthy(spec, "description")) out += "// " + string_field(spec, "description") + "\n";
  out += name + (is_required(params, name) ? "" : "?") + ": " + typescript_type(spec);
  if (spec.is_object() && spec.contains("default")) {
    if (truthy(spec, "enum"))
      out += ", // default: " + text_of(spec["default"]);
    else if (truthy(spec, "oneOf"))
      out += "// default: " + text_of(spec["default"]);
    else
      out += ", // default: " + python_json(spec["default"]);
  }
  return out + ",\n";
}

}  // namespace

std::string harmony_tool_namespace(const json& tools) {
  if (!tools.is_array()) fail("chat request: \"tools\" must be an array, got {}", tools.type_name());
  std::string out = "## functions\n\nnamespace functions {\n\n";
  for (const json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object())
      fail("chat request: each tool needs a \"function\" object, got {}", tool.dump());
    const json& fn = tool["function"];
    if (!fn.contains("name") || !fn["name"].is_string())
      fail("chat request: tool function without a string \"name\": {}", fn.dump());
    out += "// " + string_field(fn, "description") + "\n";
    out += "type " + fn["name"].get<std::string>() + " = ";
    const json params = fn.value("parameters", json());
    if (truthy(fn, "parameters") && truthy(params, "properties") && params["properties"].is_object()) {
      out += "(_: {\n";
      for (const auto& [name, spec] : params["properties"].items())
        out += parameter_line(params, name, spec);
      out += "}) => any;\n\n";
    } else {
      out += "() => any;\n\n";
    }
  }
  return out + "} // namespace functions";
}

}  // namespace ts::chat
