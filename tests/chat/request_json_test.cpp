// Chat requests from JSON: both accepted shapes and the errors for malformed input.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "util/error.h"

namespace ts::chat {
namespace {

using nlohmann::json;

TEST(ChatRequestJson, PlainMessageArray) {
  Request r = request_from_json(json::parse(R"([{"role":"user","content":"hi"},
      {"role":"assistant","content":"yo","thinking":"t"}])"));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_EQ(r.messages[1].thinking, "t");
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_EQ(r.reasoning_effort, "");
}

TEST(ChatRequestJson, ObjectWithOptions) {
  Request r = request_from_json(json::parse(R"({"messages":[{"role":"assistant","content":null,
      "tool_calls":[{"function":{"name":"f","arguments":{}}}]},{"role":"tool","name":"f","content":"1"}],
      "tools":[{"type":"function","function":{"name":"f"}}],
      "reasoning_effort":"high","add_generation_prompt":false})"));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].content, "");
  EXPECT_EQ(r.messages[0].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].name, "f");
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.reasoning_effort, "high");
  EXPECT_FALSE(r.add_generation_prompt);
}

TEST(ChatRequestJson, MalformedInputIsRejected) {
  for (const char* bad : {
           R"("hello")",
           R"([])",
           R"({"msgs":[]})",
           R"([{"content":"no role"}])",
           R"([{"role":"user","content":5}])",
           R"(["not an object"])",
           R"([{"role":"assistant","tool_calls":{"name":"f"}}])",
           R"({"messages":[{"role":"user"}],"tools":{}})",
           R"({"messages":[{"role":"user"}],"reasoning_effort":"max"})",
           R"({"messages":[{"role":"user"}],"add_generation_prompt":"yes"})",
       })
    EXPECT_THROW(request_from_json(json::parse(bad)), Error) << bad;
}

TEST(ChatRequestJson, ErrorNamesTheMessage) {
  try {
    request_from_json(json::parse(R"([{"role":"user","content":"a"},{"role":"user","content":[1]}])"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("message 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts::chat
