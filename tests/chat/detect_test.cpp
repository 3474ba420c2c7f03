// Template recognition on the real template texts, format names, and the Context a template implies.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/test_files.h"

namespace ts::chat {
namespace {

using test::read_template_file;

TEST(ChatDetect, RecognisesReferenceTemplates) {
  EXPECT_EQ(detect(read_template_file("smollm2-135m-instruct.jinja")), Format::ChatML);
  EXPECT_EQ(detect(read_template_file("qwen2.5-7b-instruct.jinja")), Format::ChatML);
  EXPECT_EQ(detect(read_template_file("meta-llama-3-8b-instruct.jinja")), Format::Llama3);
  EXPECT_EQ(detect(read_template_file("gemma-3-it.jinja")), Format::Gemma);
  EXPECT_EQ(detect(read_template_file("phi-3.jinja")), Format::Phi3);
  EXPECT_EQ(detect(read_template_file("openai-gpt-oss-120b.jinja")), Format::Harmony);
}

TEST(ChatDetect, UnknownTemplateIsNotGuessed) {
  EXPECT_EQ(detect(""), std::nullopt);
  EXPECT_EQ(detect("{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"),
            std::nullopt);
  // <|end|> alone (without <|user|>) is not Phi-3.
  EXPECT_EQ(detect("{{ m['content'] + '<|end|>' }}"), std::nullopt);
}

TEST(ChatDetect, FormatNamesRoundTrip) {
  for (Format f : {Format::ChatML, Format::Llama3, Format::Gemma, Format::Phi3, Format::Harmony})
    EXPECT_EQ(parse_format_name(format_name(f)), f) << format_name(f);
  EXPECT_EQ(format_name(Format::Phi3), "phi3");
  EXPECT_EQ(parse_format_name("ChatML"), std::nullopt);
  EXPECT_EQ(parse_format_name("llama2"), std::nullopt);
}

TEST(ChatContext, DefaultSystemPromptFromTemplateText) {
  Context smol = context_for(read_template_file("smollm2-135m-instruct.jinja"), "<s>", "2026-12-02");
  EXPECT_EQ(smol.default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(smol.bos_text, "<s>");
  EXPECT_EQ(smol.date, "2026-12-02");
  // Qwen2.5 writes "\n" as an escape and has two non-constant system literals before the default.
  EXPECT_EQ(context_for(read_template_file("qwen2.5-7b-instruct.jinja"), "", "").default_system,
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
}

TEST(ChatContext, NoDefaultSystemWhereTheTemplateHasNone) {
  for (const char* name : {"phi-3.jinja", "meta-llama-3-8b-instruct.jinja", "gemma-3-it.jinja",
                           "openai-gpt-oss-120b.jinja"})
    EXPECT_EQ(context_for(read_template_file(name), "", "").default_system, "") << name;
  // The system literal continues with the message's content, so it is not a default prompt.
  EXPECT_EQ(context_for("{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>' }}", "", "")
                .default_system,
            "");
}

}  // namespace
}  // namespace ts::chat
