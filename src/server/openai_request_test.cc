#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using chat_template::Dict;
using chat_template::Value;

const Dict& message(const ChatRequest& r, size_t idx) {
  return r.template_inputs.messages.as_list().at(idx).as_dict();
}

const Value& field(const Value& dict, std::string_view name) {
  static const Value missing;
  const Value* v = dict.is_dict() ? dict.as_dict().find(name) : nullptr;
  return v != nullptr ? *v : missing;
}

TEST(CompletionRequest, PromptForms) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi","max_tokens":5})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_TRUE(r->prompts[0].is_text);
  EXPECT_EQ(r->prompts[0].text, "hi");
  EXPECT_EQ(*r->sampling.max_tokens, 5);

  r = parse_completion_request(R"({"prompt":["a","b"]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts.size(), 2u);

  r = parse_completion_request(R"({"prompt":[1,2,3]})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_FALSE(r->prompts[0].is_text);
  EXPECT_EQ(r->prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));

  r = parse_completion_request(R"({"prompt":[[1,2],[3]]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts.size(), 2u);

  EXPECT_FALSE(parse_completion_request(R"({"prompt":{"a":1}})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":[]})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"max_tokens":3})").ok());
}

TEST(CompletionRequest, MalformedJsonNamesThePosition) {
  auto r = parse_completion_request(R"({"prompt": "x",})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_NE(r.error().message.find("Invalid JSON body"), std::string::npos);
  EXPECT_NE(r.error().message.find("column"), std::string::npos) << r.error().message;

  r = parse_completion_request("[1,2]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected a JSON object"), std::string::npos);
  EXPECT_FALSE(parse_completion_request("").ok());
}

TEST(CompletionRequest, WrongTypesAndRanges) {
  auto r = parse_completion_request(R"({"prompt":"x","temperature":"hot"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "temperature");
  EXPECT_EQ(r.error().message, "'temperature' must be a number, got a string");

  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","temperature":-1})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","top_p":0})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","top_k":-2})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","n":0})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","max_tokens":0})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","logprobs":21})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","presence_penalty":3})").ok());
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","min_tokens":5,"max_tokens":2})").ok());
  auto so = parse_completion_request(R"({"prompt":"x","stream_options":{"include_usage":true}})");
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.error().param, "stream_options");
}

TEST(CompletionRequest, NullAndUnknownFieldsAreIgnored) {
  auto r = parse_completion_request(
      R"({"prompt":"x","logprobs":null,"temperature":null,"some_new_field":{"a":[1]},"user":"u"})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->logprobs.has_value());
  EXPECT_FALSE(r->sampling.temperature.has_value());
}

// Found by fuzz_openai_request: integers outside int64 were converted with
// undefined behaviour; they are wrong types now.
TEST(CompletionRequest, HugeIntegersAreRejectedNotConverted) {
  for (const char* body : {R"({"prompt":"x","n":18446744073709551615})",
                           R"({"prompt":"x","seed":1e300})", R"({"prompt":"x","max_tokens":-1e19})"}) {
    auto r = parse_completion_request(body);
    EXPECT_FALSE(r.ok()) << body;
  }
  // The soak test saw "'n' must be an integer, got an integer" for 2^64-1.
  auto unsigned_huge = parse_completion_request(R"({"prompt":"x","n":18446744073709551615})");
  ASSERT_FALSE(unsigned_huge.ok());
  EXPECT_NE(unsigned_huge.error().message.find("got an integer above 2^63-1"), std::string::npos)
      << unsigned_huge.error().message;
  auto ok = parse_completion_request(R"({"prompt":"x","max_tokens":5.0})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok->sampling.max_tokens, 5);
}

TEST(CompletionRequest, ListFieldsAreBounded) {
  std::string stops = "[";
  for (size_t i = 0; i <= Limits::kMaxStopStrings; ++i)
    stops += std::string(i ? "," : "") + "\"s\"";
  stops += "]";
  auto r = parse_completion_request(R"({"prompt":"x","stop":)" + stops + "}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("at most 64 strings"), std::string::npos) << r.error().message;
  auto long_stop = parse_completion_request(R"({"prompt":"x","stop":")" + std::string(5000, 'a') +
                                            R"("})");
  ASSERT_FALSE(long_stop.ok());
  EXPECT_NE(long_stop.error().message.find("at most 4096 bytes"), std::string::npos);
  std::string ids = "[";
  for (size_t i = 0; i <= Limits::kMaxStopTokenIds; ++i) ids += std::string(i ? "," : "") + "1";
  ids += "]";
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","stop_token_ids":)" + ids + "}").ok());
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","stop":["a","b"]})").ok());
}

TEST(CompletionRequest, KvTransferParams) {
  auto r = parse_completion_request(
      R"({"prompt":"x","kv_transfer_params":{"remote_host":"10.0.0.2","remote_port":5710,)"
      R"("max_load_tokens":64,"do_remote_decode":true,"remote_engine_id":"e1"}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sampling.kv_transfer.remote_host, "10.0.0.2");
  EXPECT_EQ(r->sampling.kv_transfer.remote_port, 5710);
  EXPECT_EQ(r->sampling.kv_transfer.max_load_tokens, 64);
  EXPECT_EQ(r->sampling.kv_transfer.max_offload_tokens, -1);
  EXPECT_TRUE(r->sampling.kv_transfer.do_remote_decode);
  auto nested = parse_completion_request(
      R"({"prompt":"x","kv_transfer_params":{"remote_kv_source":{"remote_host":"h","remote_port":7}}})");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested->sampling.kv_transfer.remote_host, "h");
  EXPECT_EQ(nested->sampling.kv_transfer.remote_port, 7);
  EXPECT_FALSE(parse_completion_request(
                   R"({"prompt":"x","kv_transfer_params":{"remote_port":"5710"}})")
                   .ok());
  EXPECT_FALSE(parse_completion_request(
                   R"({"prompt":"x","kv_transfer_params":{"remote_port":70000}})")
                   .ok());
}

TEST(CompletionRequest, VllmExtras) {
  auto r = parse_completion_request(
      R"({"prompt":"x","top_k":5,"min_p":0.1,"repetition_penalty":1.1,"min_tokens":2,)"
      R"("ignore_eos":true,"stop":"##","stop_token_ids":[7],"skip_special_tokens":false,)"
      R"("include_stop_str_in_output":true,"cache_salt":"s","seed":42,"n":3,)"
      R"("logit_bias":{"5":200,"6":-1.5},"stream":true,)"
      R"("stream_options":{"include_usage":true},"echo":true,"logprobs":2})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SamplingFields& s = r->sampling;
  EXPECT_EQ(*s.top_k, 5);
  EXPECT_DOUBLE_EQ(*s.min_p, 0.1);
  EXPECT_EQ(*s.min_tokens, 2);
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_EQ(s.stop, std::vector<std::string>{"##"});
  EXPECT_EQ(s.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_FALSE(s.skip_special_tokens);
  EXPECT_TRUE(s.include_stop_str_in_output);
  EXPECT_EQ(s.cache_salt, "s");
  EXPECT_EQ(*s.seed, 42);
  EXPECT_EQ(s.n, 3);
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>{5, 100.0f}));  // clamped
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.include_usage);
  EXPECT_TRUE(r->echo);
  EXPECT_EQ(*r->logprobs, 2);
}

TEST(CompletionRequest, UnsupportedFeaturesAre400NotIgnored) {
  for (const char* body : {R"({"prompt":"x","best_of":2})",
                           R"({"prompt":"x","use_beam_search":true})",
                           R"({"prompt":"x","response_format":{"type":"structural_tag"}})",
                           R"({"prompt":"x","structured_outputs":{"structural_tag":"{}"}})"}) {
    auto r = parse_completion_request(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error().message.find("not supported"), std::string::npos);
  }
  EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","response_format":{"type":"text"},)"
                                       R"("tool_choice":"auto","bad_words":[],"best_of":1})")
                  .ok());
  auto t = parse_completion_request(R"({"prompt":"x","truncate_prompt_tokens":5})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->sampling.truncate_prompt_tokens, 5);
}

TEST(StructuredOutputs, EveryFieldNameMapsToItsKind) {
  using Kind = StructuredOutputRequest::Kind;
  struct Case {
    const char* body;
    Kind kind;
    const char* text;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":"x","response_format":{"type":"json_object"}})", Kind::kJsonObject, "",
       "response_format"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}}})",
       Kind::kJsonSchema, R"({"type":"object"})", "response_format"},
      {R"({"prompt":"x","structured_outputs":{"json":{"type":"integer"}}})", Kind::kJsonSchema,
       R"({"type":"integer"})", "structured_outputs.json"},
      {R"({"prompt":"x","structured_outputs":{"json":"{\"type\":\"null\"}"}})",
       Kind::kJsonSchema, R"({"type":"null"})", "structured_outputs.json"},
      {R"({"prompt":"x","structured_outputs":{"regex":"[a-z]+"}})", Kind::kRegex, "[a-z]+",
       "structured_outputs.regex"},
      {R"({"prompt":"x","structured_outputs":{"grammar":"root ::= \"a\""}})", Kind::kGrammar,
       R"(root ::= "a")", "structured_outputs.grammar"},
      {R"({"prompt":"x","structured_outputs":{"json_object":true}})", Kind::kJsonObject, "",
       "structured_outputs.json_object"},
      {R"({"prompt":"x","guided_json":{"type":"object"}})", Kind::kJsonSchema,
       R"({"type":"object"})", "guided_json"},
      {R"({"prompt":"x","guided_regex":"a|b"})", Kind::kRegex, "a|b", "guided_regex"},
      {R"({"prompt":"x","guided_grammar":"root ::= [0-9]"})", Kind::kGrammar, "root ::= [0-9]",
       "guided_grammar"},
  };
  for (const Case& c : cases) {
    auto r = parse_completion_request(c.body);
    ASSERT_TRUE(r.ok()) << c.body << ": " << r.error().message;
    const StructuredOutputRequest& so = r->sampling.structured;
    EXPECT_EQ(so.kind, c.kind) << c.body;
    EXPECT_EQ(so.text, c.text) << c.body;
    EXPECT_EQ(so.param, c.param) << c.body;
  }
  auto strict = parse_completion_request(
      R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{},"strict":true}}})");
  ASSERT_TRUE(strict.ok());
  EXPECT_TRUE(strict->sampling.structured.strict);
  auto choice = parse_completion_request(R"({"prompt":"x","guided_choice":["yes","no"]})");
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->sampling.structured.kind, Kind::kChoice);
  EXPECT_EQ(choice->sampling.structured.choices, (std::vector<std::string>{"yes", "no"}));
}

TEST(StructuredOutputs, TwoConstraintsOrBadShapesAre400) {
  for (const char* body : {
           R"({"prompt":"x","guided_regex":"a","guided_choice":["b"]})",
           R"({"prompt":"x","response_format":{"type":"json_object"},"structured_outputs":{"regex":"a"}})",
           R"({"prompt":"x","structured_outputs":{"json":5}})",
           R"({"prompt":"x","structured_outputs":{"choice":[]}})",
           R"({"prompt":"x","response_format":{"type":"json_schema"}})",
           R"({"prompt":"x","response_format":{"type":"yaml"}})",
       }) {
    auto r = parse_completion_request(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().status, 400) << body;
  }
}

TEST(ChatRequest, ToolChoiceForms) {
  auto named = parse_chat_request(
      R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false})");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->tool_choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(named->tool_choice.name, "f");
  EXPECT_FALSE(named->parallel_tool_calls);
  for (auto [text, mode] : {std::pair{"none", ToolChoice::Mode::kNone},
                            std::pair{"auto", ToolChoice::Mode::kAuto},
                            std::pair{"required", ToolChoice::Mode::kRequired}}) {
    auto r = parse_chat_request(std::string(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":")") +
                                text + "\"}");
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_EQ(r->tool_choice.mode, mode);
    EXPECT_TRUE(r->tool_choice.given);
  }
  auto absent = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->tool_choice.given);
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes"})").ok());
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"function"}})").ok());
}

TEST(ChatRequest, AssistantToolCallTurnsRenderAsTemplatesExpect) {
  auto r = parse_chat_request(R"({"messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"22"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Dict& assistant = message(*r, 1);
  EXPECT_EQ(assistant.find("content")->as_string(), "");  // vLLM: null content renders as ""
  const Value& args =
      field(field(assistant.find("tool_calls")->as_list()[0], "function"), "arguments");
  EXPECT_TRUE(args.is_dict());
  EXPECT_EQ(field(args, "city").as_string(), "Paris");
  auto bad = parse_chat_request(R"({"messages":[{"role":"assistant","content":null,
      "tool_calls":[{"type":"function","function":{"name":"f","arguments":"{not json"}}]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
  // No arguments, or "" (a client reassembling an empty stream): {}.
  auto empty = parse_chat_request(R"({"messages":[{"role":"assistant","content":null,
      "tool_calls":[{"type":"function","function":{"name":"f","arguments":""}},
                    {"type":"function","function":{"name":"g"}}]}]})");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  for (const Value& call : message(*empty, 0).find("tool_calls")->as_list()) {
    const Value& arguments = field(field(call, "function"), "arguments");
    EXPECT_TRUE(arguments.is_dict() && arguments.as_dict().size() == 0);
  }
  // Content parts with a non-string type are a 400, not an exception.
  auto typed = parse_chat_request(R"({"messages":[{"role":"user","content":[{"type":1,"text":"x"}]}]})");
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().status, 400);
}

TEST(ChatRequest, TokenFiltersEchoAndTemplate) {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"user","content":"hi"}],"allowed_token_ids":[3,4],"bad_words":["x","y z"],"echo":true,"chat_template":"{{ 1 }}"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sampling.allowed_token_ids, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(r->sampling.bad_words, (std::vector<std::string>{"x", "y z"}));
  EXPECT_TRUE(r->echo);
  EXPECT_EQ(*r->chat_template, "{{ 1 }}");
  EXPECT_FALSE(
      parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"allowed_token_ids":[]})")
          .ok());
}

TEST(ChatRequest, MessagesToolsAndTemplateFields) {
  auto r = parse_chat_request(
      R"({"model":"m","messages":[{"role":"system","content":"s"},)"
      R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],)"
      R"("tools":[{"type":"function","function":{"name":"f","parameters":{"z":1,"a":2}}}],)"
      R"("chat_template_kwargs":{"enable_thinking":false},"max_completion_tokens":7,)"
      R"("max_tokens":3,"logprobs":true,"top_logprobs":2})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(message(*r, 1).find("content")->as_string(), "a\nb");
  // Key order survives (templates render tools with tojson).
  EXPECT_EQ(r->tools.dump(),
            R"([{"type":"function","function":{"name":"f","parameters":{"z":1,"a":2}}}])");
  // The template sees the same order.
  EXPECT_EQ(field(field(r->template_inputs.tools.as_list()[0], "function"), "parameters")
                .as_dict()
                .entries()[0]
                .first,
            "z");
  EXPECT_FALSE(field(r->template_inputs.kwargs, "enable_thinking").truthy());
  EXPECT_TRUE(field(r->template_inputs.kwargs, "enable_thinking").is_bool());
  EXPECT_EQ(*r->sampling.max_tokens, 7);
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 2);
  EXPECT_FALSE(r->add_special_tokens);
}

TEST(ChatRequest, TemplateValuesKeepJsonNumbersAndDuplicateKeys) {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"user","content":"x","i":1,"f":1.0,"u":18446744073709551615,)"
      R"("b":true,"z":null,"i":2}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Dict& m = message(*r, 0);
  EXPECT_TRUE(m.find("i")->is_int());
  EXPECT_EQ(m.find("i")->as_int(), 2);  // the last value, in the first place
  EXPECT_EQ(m.entries()[2].first, "i");
  EXPECT_TRUE(m.find("f")->is_float());
  EXPECT_TRUE(m.find("u")->is_float());
  EXPECT_TRUE(m.find("b")->is_bool());
  EXPECT_TRUE(m.find("z")->is_none());
}

TEST(ChatRequest, Errors) {
  EXPECT_FALSE(parse_chat_request(R"({"model":"m"})").ok());
  EXPECT_FALSE(parse_chat_request(R"({"messages":"hi"})").ok());
  EXPECT_FALSE(parse_chat_request(R"({"messages":[{"content":"x"}]})").ok());
  EXPECT_FALSE(
      parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})").ok());
  EXPECT_FALSE(parse_chat_request(
                   R"({"messages":[{"role":"user","content":"x"}],"continue_final_message":true})")
                   .ok());
  EXPECT_FALSE(
      parse_chat_request(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})")
          .ok());
}

TEST(TokenizeRequest, PromptAndChatForms) {
  auto r = parse_tokenize_request(R"({"prompt":"abc","add_special_tokens":false})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->is_chat);
  EXPECT_FALSE(r->add_special_tokens);
  r = parse_tokenize_request(R"({"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_chat);
  EXPECT_FALSE(r->add_special_tokens);
  EXPECT_FALSE(parse_tokenize_request(R"({"model":"m"})").ok());
  auto d = parse_detokenize_request(R"({"tokens":[1,2]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_FALSE(parse_detokenize_request(R"({"tokens":"x"})").ok());
}

}  // namespace
}  // namespace strata::server
