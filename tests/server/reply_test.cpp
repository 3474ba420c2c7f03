// What a client sees of a Harmony (gpt-oss) reply, from tokens of the real o200k_harmony vocabulary
// streamed one at a time as the scheduler delivers them: reasoning, answer, tool call with JSON
// arguments, the finish reason, and stop strings matched on the answer only.
#include <gtest/gtest.h>

#include "server/reply.h"
#include "tokenizer/harmony_vocab.h"

namespace ts::server {
namespace {

class ReplyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = harmony_from_tiktoken(std::string(TS_TEST_DATA) + "/tokenizers/o200k_base.tiktoken").release(); }
  static void TearDownTestSuite() { delete tok_; }

  // Streams `text` (the model's output after the prompt's "<|start|>assistant") into a Reply the way
  // the scheduler does: each token's text, the end-of-generation token only in the result.
  struct Run {
    std::vector<ReplyDelta> deltas;
    std::string finish;
    std::string content, reasoning;
    std::vector<ToolCall> tool_calls;
  };
  static Run stream(const std::string& text, std::vector<std::string> stop = {}) {
    Reply reply(*tok_, true, std::move(stop));
    StreamDecoder dec(*tok_);
    Run run;
    JobResult r;
    r.finish = Finish::MaxTokens;
    for (int32_t id : tok_->encode(text, false, true)) {
      if (tok_->is_eog(id)) {
        r.finish = Finish::EndOfText;
        r.last_token = id;
        break;
      }
      SampledToken t;
      t.id = id;
      t.text = dec.push(id);
      run.deltas.push_back(reply.push(t));
      if (reply.stop_found()) {
        r.finish = Finish::Cancelled;  // the server cancels the job
        break;
      }
    }
    run.deltas.push_back(reply.finish(r));
    run.finish = reply.finish_reason(r);
    for (const auto& d : run.deltas) {
      run.content += d.content;
      run.reasoning += d.reasoning;
    }
    EXPECT_EQ(run.content, reply.content());
    EXPECT_EQ(run.reasoning, reply.reasoning());
    run.tool_calls = reply.tool_calls();
    return run;
  }
  static Tokenizer* tok_;
};
Tokenizer* ReplyTest::tok_ = nullptr;

TEST_F(ReplyTest, ReasoningThenAnswer) {
  const Run r = stream("<|channel|>analysis<|message|>The user wants a sum.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4<|return|>");
  EXPECT_EQ(r.reasoning, "The user wants a sum.");
  EXPECT_EQ(r.content, "2 + 2 = 4");
  EXPECT_EQ(r.finish, "stop");
  for (const auto& d : r.deltas) EXPECT_TRUE(d.tool_calls.empty());
}

TEST_F(ReplyTest, ToolCallWithJsonArguments) {
  const Run r = stream("<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant to=functions.get_weather"
                       "<|channel|>commentary <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>");
  std::vector<ToolCallDelta> deltas;
  for (const auto& d : r.deltas)
    for (const auto& c : d.tool_calls) deltas.push_back(c);
  EXPECT_EQ(r.finish, "tool_calls");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  const ToolCall& call = r.tool_calls[0];
  EXPECT_EQ(call.name, "get_weather");
  EXPECT_EQ(call.arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(call.id.rfind("call_", 0), 0u);
  EXPECT_EQ(r.reasoning, "Need the weather.");
  EXPECT_EQ(r.content, "");
  // Streamed: the first delta of the call carries its id and name, the arguments arrive in pieces.
  ASSERT_FALSE(deltas.empty());
  EXPECT_TRUE(deltas[0].first);
  std::string args;
  for (size_t i = 0; i < deltas.size(); ++i) {
    EXPECT_EQ(deltas[i].index, 0u);
    EXPECT_EQ(deltas[i].first, i == 0);
    args += deltas[i].arguments;
  }
  EXPECT_EQ(args, call.arguments);
}

TEST_F(ReplyTest, StopStringsApplyToTheAnswerOnly) {
  const Run r = stream("<|channel|>analysis<|message|>Say STOP then stop.<|end|><|start|>assistant<|channel|>final<|message|>One two STOP three<|return|>",
                       {"STOP"});
  EXPECT_EQ(r.reasoning, "Say STOP then stop.");
  EXPECT_EQ(r.content, "One two ");
  EXPECT_EQ(r.finish, "stop");
}

TEST_F(ReplyTest, ABudgetEndIsLength) {
  const Run r = stream("<|channel|>final<|message|>Unfinished");
  EXPECT_EQ(r.content, "Unfinished");
  EXPECT_EQ(r.finish, "length");
}

TEST_F(ReplyTest, PlainModelsPassTextThrough) {
  Reply reply(*tok_, false, {"ignored here: the sequence applies them"});
  SampledToken t;
  t.id = 0;
  t.text = "<|channel|>ignored here";
  EXPECT_EQ(reply.push(t).content, "<|channel|>ignored here");
  JobResult r;
  r.finish = Finish::EndOfText;
  r.tail = "!";
  EXPECT_EQ(reply.finish(r).content, "!");
  EXPECT_EQ(reply.finish_reason(r), "stop");
}

}  // namespace
}  // namespace ts::server
