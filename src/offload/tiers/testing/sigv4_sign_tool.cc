// Test tool for sigv4_botocore_test.py: signs requests read as JSON lines on
// stdin with offload::sigv4 and writes one JSON line per request:
//   in:  {"method", "path" (decoded), "query": [[name, value]...],
//         "headers": [[name, value]...], "body_hex", "access_key", "secret_key",
//         "session_token", "region", "amz_date"}
//   out: {"canonical_request", "string_to_sign", "authorization"}
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "offload/tiers/obj/sigv4.h"

namespace {

using strata::offload::sigv4::Pairs;

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

Pairs pairs_of(const nlohmann::json& j) {
  Pairs out;
  for (const auto& p : j) out.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  return out;
}

}  // namespace

int main() {
  namespace sigv4 = strata::offload::sigv4;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const nlohmann::json in = nlohmann::json::parse(line);
    sigv4::Request req;
    req.method = in.at("method").get<std::string>();
    req.path = in.at("path").get<std::string>();
    req.query = pairs_of(in.at("query"));
    req.headers = pairs_of(in.at("headers"));
    const std::vector<uint8_t> body = from_hex(in.at("body_hex").get<std::string>());
    req.payload_sha256 = sigv4::sha256_hex(body);
    const sigv4::Credentials creds{in.at("access_key").get<std::string>(),
                                   in.at("secret_key").get<std::string>(),
                                   in.at("session_token").get<std::string>()};
    const sigv4::Signed s = sigv4::sign(req, creds, in.at("region").get<std::string>(), "s3",
                                        in.at("amz_date").get<std::string>());
    nlohmann::json out = {{"canonical_request", s.canonical_request},
                          {"string_to_sign", s.string_to_sign},
                          {"authorization", s.authorization}};
    std::cout << out.dump() << "\n";
  }
  return 0;
}
