// Conformance: real chat templates (Llama 3.1, Llama 3.2, Qwen2.5, Qwen3,
// Mistral Nemo, from the npm packages in tools/chat-template-oracle) rendered
// by Strata must equal, byte for byte, what jinja2 renders the way
// transformers does (tools/chat-template-oracle/render_oracle.py, run by the
// ctest fixture chat_template_oracle). Expected errors must match too:
// raise_exception messages exactly, other errors by failing.
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "chat_template/chat_template.h"

namespace strata::chat_template {
namespace {

using Json = nlohmann::ordered_json;

std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: " +
         Json(want.substr(from, 120)).dump() + "\n  got:  " + Json(got.substr(from, 120)).dump();
}

Json load_expected() {
  const char* path = std::getenv("STRATA_CHAT_TEMPLATE_EXPECTED");
  if (path == nullptr) return Json{{"missing", "STRATA_CHAT_TEMPLATE_EXPECTED is not set (run via ctest)"}};
  std::ifstream in(path);
  if (!in) return Json{{"missing", std::string(path) + " not found (run via ctest)"}};
  std::stringstream buf;
  buf << in.rdbuf();
  return Json::parse(buf.str());
}

TEST(ChatTemplateConformance, RealTemplatesMatchJinja2) {
  Json expected = load_expected();
  if (expected.contains("missing")) GTEST_SKIP() << expected["missing"].get<std::string>();

  std::map<std::string, ChatTemplate> templates;
  for (auto it = expected["templates"].begin(); it != expected["templates"].end(); ++it) {
    auto parsed = ChatTemplate::parse(it.value()["source"].get<std::string>());
    ASSERT_TRUE(parsed.ok()) << it.key() << ": " << parsed.status().to_string();
    templates.emplace(it.key(), std::move(parsed).value());
  }
  std::map<std::string, std::pair<int, int>> tally;  // template -> (cases, matches)
  for (const Json& c : expected["cases"]) {
    std::string tname = c["template"].get<std::string>();
    SCOPED_TRACE(tname + "/" + c["name"].get<std::string>());
    const Json& info = expected["templates"][tname];
    auto rendered = apply_chat_template(
        templates.at(tname), c["messages"], c["add_generation_prompt"].get<bool>(), c["tools"],
        info["bos_token"].get<std::string>(), info["eos_token"].get<std::string>(), c["kwargs"]);
    bool match = false;
    if (c.contains("expected")) {
      std::string want = c["expected"].get<std::string>();
      match = rendered.ok() && *rendered == want;
      EXPECT_TRUE(rendered.ok()) << rendered.status().to_string();
      if (rendered.ok()) {
        EXPECT_TRUE(match) << first_difference(want, *rendered);
      }
    } else {
      bool internal = c.value("error_is_internal", false);
      match = !rendered.ok() && (internal || rendered.status().message() == c["error"]);
      EXPECT_TRUE(match) << "want error " << c["error"] << "; got "
                         << (rendered.ok() ? "success" : rendered.status().to_string());
    }
    tally[tname].first++;
    tally[tname].second += match ? 1 : 0;
  }
  for (const auto& [tname, counts] : tally) {
    std::printf("chat template conformance: %-14s %d/%d conversations match\n", tname.c_str(),
                counts.second, counts.first);
    EXPECT_GE(counts.first, 20) << tname;
  }
}

}  // namespace
}  // namespace strata::chat_template
