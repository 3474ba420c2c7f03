// The Harmony (gpt-oss) path end to end: render a conversation, tokenize it with the o200k_harmony
// vocabulary (o200k_base.tiktoken + the Harmony specials), run it through a synthesized gpt-oss
// model of the real vocabulary size, and parse an assistant turn detokenized id by id back into its
// channels. The tokens of the turn are chosen by the test (a random-weight model writes nonsense),
// but every stage in between is the real one.
#include <gtest/gtest.h>

#include <cmath>

#include "chat/chat_template.h"
#include "cli/cli_harness.h"
#include "chat/harmony_parser.h"
#include "model/forward.h"
#include "tokenizer/harmony_vocab.h"

namespace ts {
namespace {

TEST(HarmonyEndToEnd, RenderTokenizeRunAndParse) {
  const auto tok = harmony_from_tiktoken(std::string(TS_TEST_DATA) + "/tokenizers/o200k_base.tiktoken");
  ASSERT_EQ(tok->n_vocab(), 201088);

  chat::Request req;
  req.messages.push_back({"system", "Answer briefly.", "", nullptr, ""});
  req.messages.push_back({"user", "What is 2+2?", "", nullptr, ""});
  chat::Context ctx;
  ctx.date = "2026-12-02";
  const std::string prompt = chat::render(chat::Format::Harmony, req, ctx);
  const std::vector<int32_t> ids = tok->encode(prompt, false, true);
  // Framing tokens are single special ids, not text: the prompt starts <|start|>system<|message|>
  // and ends by opening the assistant's header.
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], 200006);
  EXPECT_EQ(ids[2], 200008);
  EXPECT_EQ(ids[ids.size() - 2], 200006);
  EXPECT_EQ(tok->decode(ids), prompt);

  test::ScratchDir dir;
  const std::string model_path = dir.file("gpt-oss.gguf");
  const test::CliRun synth = test::run_cli({"synth", "--arch", "gpt-oss", "--preset", "tiny", "--vocab", "201088", "-o", model_path});
  ASSERT_EQ(synth.code, 0) << synth.err;
  auto be = make_cpu_backend(2);
  auto model = Model::load(model_path, *be);
  KvCache kv(*be, model->hp(), 512);
  Forward fwd(*model, *be);
  std::vector<float> logits(model->hp().n_vocab);
  for (size_t i = 0; i < ids.size(); i += fwd.max_batch())
    fwd.run(kv, ids.data() + i, std::min<int64_t>(fwd.max_batch(), ids.size() - i), false, logits.data());
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));

  // An assistant turn: reasoning, then the answer, then <|return|>, streamed one id at a time.
  const std::string turn = "<|channel|>analysis<|message|>Simple sum: 4.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4 ✓<|return|>";
  const std::vector<int32_t> out = tok->encode(turn, false, true);
  StreamDecoder dec(*tok);
  chat::HarmonyParser parser;
  std::string analysis, final_text;
  for (int32_t id : out) {
    EXPECT_FALSE(parser.stopped());
    for (const auto& ev : parser.push(dec.push(id))) (ev.channel == "final" ? final_text : analysis) += ev.text;
    if (tok->is_eog(id)) break;
  }
  EXPECT_TRUE(parser.stopped());
  EXPECT_EQ(parser.stop_token(), "<|return|>");
  EXPECT_EQ(analysis, "Simple sum: 4.");
  EXPECT_EQ(final_text, "2 + 2 = 4 ✓");
}

}  // namespace
}  // namespace ts
