#include "server/kv_transfer_config.h"

#include <gtest/gtest.h>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/obj/obj_tier.h"
#include "offload/tiers/p2p/p2p_tier.h"
#include "offload/tiers/plugin/plugin_tier_config.h"

namespace strata::server {
namespace {

std::string with_extra(const std::string& extra) {
  return R"({"kv_connector":"OffloadingConnector","kv_role":"kv_both",)"
         R"("kv_connector_extra_config":)" + extra + "}";
}

std::string error_of(const std::string& json) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(json, 16);
  EXPECT_FALSE(c.ok()) << json;
  return c.ok() ? "" : c.status().message();
}

TEST(KvTransferConfig, ParsesTheIssueExample) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1048576,)"
                 R"("blocks_per_chunk":2,"eviction_policy":"arc","secondary_tiers":[)"
                 R"({"type":"fs","root_dir":"/tmp/kv","n_read_threads":3,"n_write_threads":2,)"
                 R"("max_bytes":1000000}]})"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->cpu_bytes_to_use, 1048576);
  EXPECT_EQ(c->blocks_per_chunk, 2);
  EXPECT_EQ(c->eviction_policy, "arc");
  ASSERT_EQ(c->secondary_tiers.size(), 1u);
  EXPECT_EQ(c->secondary_tiers[0].type, "fs");
  EXPECT_EQ(c->secondary_tiers[0].as<offload::FsTierConfig>().root_dir, "/tmp/kv");
  EXPECT_EQ(c->secondary_tiers[0].as<offload::FsTierConfig>().n_read_threads, 3);
  EXPECT_EQ(c->secondary_tiers[0].as<offload::FsTierConfig>().n_write_threads, 2);
  EXPECT_EQ(c->secondary_tiers[0].as<offload::FsTierConfig>().max_bytes, 1000000);
}

TEST(KvTransferConfig, BlockSizeInTokensBecomesBlocksPerChunk) {
  StatusOr<offload::OffloadConfig> c =
      parse_kv_transfer_config(with_extra(R"({"cpu_bytes_to_use":100,"block_size":64})"), 16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->blocks_per_chunk, 4);
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":100,"block_size":24})"))
                .find("multiple of --block-size 16"),
            std::string::npos);
}

TEST(KvTransferConfig, UnknownKeysAreNamedWithTheirPath) {
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":1,"cpu_bytes":2})"))
                .find("unknown key kv_connector_extra_config.cpu_bytes"),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"fs","root_dir":"/x","rootdir":1}]})"))
                .find("kv_connector_extra_config.secondary_tiers[0].rootdir"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kv_connector":"OffloadingConnector","extra":1})").find("unknown key extra"),
            std::string::npos);
}

TEST(KvTransferConfig, WrongTypesAreNamed) {
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":"lots"})"))
                .find("kv_connector_extra_config.cpu_bytes_to_use must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"fs","root_dir":"/x","n_read_threads":"4"}]})"))
                .find("secondary_tiers[0].n_read_threads must be an integer >= 1, got \"4\""),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":1,"eviction_policy":"mru"})"))
                .find("eviction_policy must be \"lru\" or \"arc\""),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":1,"offload_prompt_only":1})"))
                .find("offload_prompt_only must be true or false"),
            std::string::npos);
}

// Found by fuzz_kv_transfer_config: 7.8e64 was converted to int64 before any
// range check (undefined behaviour), and 2^64-1 wrapped to -1, slipping past
// the ">= 1" check.
TEST(KvTransferConfig, IntegersOutsideInt64AreRejectedNotConverted) {
  for (const char* value : {"7.7777e64", "18446744073709551615", "9223372036854775808",
                            "9.3e18", "-1e300", "1.5"}) {
    SCOPED_TRACE(value);
    EXPECT_NE(error_of(with_extra(std::string(R"({"cpu_bytes_to_use":)") + value + "}"))
                  .find("cpu_bytes_to_use must be an integer >= 1"),
              std::string::npos);
  }
  StatusOr<offload::OffloadConfig> ok =
      parse_kv_transfer_config(with_extra(R"({"cpu_bytes_to_use":9223372036854775807})"), 16);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->cpu_bytes_to_use, 9223372036854775807);
  ok = parse_kv_transfer_config(with_extra(R"({"cpu_bytes_to_use":4096.0})"), 16);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->cpu_bytes_to_use, 4096);
}

TEST(KvTransferConfig, RejectsWhatItCannotHonour) {
  EXPECT_NE(error_of(R"({"kv_connector":"LMCacheConnectorV1","kv_connector_extra_config":{}})")
                .find("OffloadingConnector"),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({})")).find("cpu_bytes_to_use is required"), std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"fs"}]})"))
                .find("secondary_tiers[0].root_dir is required"),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"tape"}]})"))
                .find("\"tape\" is not a tier"),
            std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"cpu_bytes_to_use":1,"secondary_tiers":[{"type":"fs","root_dir":"/x"}]})"))
                .find("TieringOffloadingSpec"),
            std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("expects a JSON object"), std::string::npos);
}

// The command in vLLM's tiering blog, verbatim: no kv_connector, no kv_role.
TEST(KvTransferConfig, BlogCommandWithoutConnectorMeansOffloadingConnector) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      R"({"kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec",)"
      R"("cpu_bytes_to_use":107374182400,"block_size":16,"eviction_policy":"lru",)"
      R"("secondary_tiers":[{"type":"fs","root_dir":"/mnt/kv","n_read_threads":32,)"
      R"("n_write_threads":16}]}})",
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->cpu_bytes_to_use, 107374182400);
  ASSERT_EQ(c->secondary_tiers.size(), 1u);
  EXPECT_EQ(c->secondary_tiers[0].as<offload::FsTierConfig>().n_read_threads, 32);
  StatusOr<offload::OffloadConfig> cpu = parse_kv_transfer_config(
      R"({"kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"CPUOffloadingSpec",)"
      R"("cpu_bytes_to_use":1048576}})",
      16);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(cpu->cpu_bytes_to_use, 1048576);
}

TEST(KvTransferConfig, MissingConnectorIsNamedWhenNoSpecImpliesIt) {
  const std::string e = error_of(R"({"kv_connector_extra_config":{"cpu_bytes_to_use":1}})");
  EXPECT_EQ(e.rfind("--kv-transfer-config: kv_connector is required", 0), 0u) << e;
  const std::string wrong = error_of(R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})");
  EXPECT_EQ(wrong.rfind("--kv-transfer-config: kv_connector must be", 0), 0u) << wrong;
  const std::string nested =
      error_of(with_extra(R"({"cpu_bytes_to_use":1,"eviction_policy":"mru"})"));
  EXPECT_EQ(nested.rfind("--kv-transfer-config: kv_connector_extra_config.eviction_policy", 0),
            0u)
      << nested;
}

TEST(KvTransferConfig, OffloadingSizeIsGibOfHostMemory) {
  StatusOr<offload::OffloadConfig> c = kv_offloading_size_config(0.5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->cpu_bytes_to_use, int64_t{1} << 29);
  EXPECT_TRUE(c->secondary_tiers.empty());
  EXPECT_FALSE(kv_offloading_size_config(0).ok());
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

TEST(KvTransferConfig, PluginTiersPassTheirEntryThrough) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                 R"("secondary_tiers":[{"type":"memory","module_path":"/opt/libm.so","max_bytes":5}]})"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->secondary_tiers.size(), 1u);
  EXPECT_EQ(c->secondary_tiers[0].type, "memory");
  EXPECT_EQ(c->secondary_tiers[0].as<offload::PluginTierConfig>().module_path, "/opt/libm.so");
  EXPECT_NE(c->secondary_tiers[0].as<offload::PluginTierConfig>().config_json.find("\"max_bytes\":5"), std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"memory","module_path":7}]})"))
                .find("secondary_tiers[0].module_path must be a string"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

std::string with_tier(const std::string& tier) {
  return with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                    R"("secondary_tiers":[)" + tier + "]}");
}

TEST(KvTransferConfig, ObjTierFlatForm) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"http://127.0.0.1:9000",)"
                R"("prefix":"team/","io_threads":8,"region":"eu-west-3","access_key":"AK",)"
                R"("secret_key":"SK","session_token":"TOK","miss_ttl_ms":0,)"
                R"("connect_timeout_ms":500,"request_timeout_ms":7000,"locality":"REMOTE"})"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->secondary_tiers.size(), 1u);
  const offload::ObjTierConfig& obj = c->secondary_tiers[0].as<offload::ObjTierConfig>();
  EXPECT_EQ(c->secondary_tiers[0].type, "obj");
  EXPECT_EQ(obj.bucket, "kv");
  EXPECT_EQ(obj.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(obj.scheme, "http");
  EXPECT_EQ(obj.prefix, "team/");
  EXPECT_EQ(obj.io_threads, 8);
  EXPECT_EQ(obj.region, "eu-west-3");
  EXPECT_EQ(obj.access_key, "AK");
  EXPECT_EQ(obj.secret_key, "SK");
  EXPECT_EQ(obj.session_token, "TOK");
  EXPECT_EQ(obj.miss_ttl_ms, 0);
  EXPECT_EQ(obj.connect_timeout_ms, 500);
  EXPECT_EQ(obj.request_timeout_ms, 7000);
}

TEST(KvTransferConfig, LocalityAndRetryDelaysAreKeptPerTier) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_tier(R"({"type":"fs","root_dir":"/kv","locality":"LOCAL","retry_initial_ms":50,)"
                R"("retry_max_ms":800},{"type":"obj","bucket":"kv",)"
                R"("endpoint_override":"http://127.0.0.1:9000"})"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->secondary_tiers.size(), 2u);
  EXPECT_EQ(c->secondary_tiers[0].locality, "LOCAL");
  EXPECT_EQ(c->secondary_tiers[0].retry.initial_ms, 50);
  EXPECT_EQ(c->secondary_tiers[0].retry.max_ms, 800);
  EXPECT_EQ(c->secondary_tiers[1].locality, "");
  EXPECT_EQ(c->secondary_tiers[1].retry.initial_ms, 1000);
  EXPECT_EQ(c->secondary_tiers[1].retry.max_ms, 60000);
  EXPECT_NE(error_of(with_tier(R"({"type":"fs","root_dir":"/kv","retry_initial_ms":500,)"
                               R"("retry_max_ms":100})"))
                .find("retry_max_ms 100 is below retry_initial_ms 500"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"fs","root_dir":"/kv","retry_initial_ms":0})"))
                .find("retry_initial_ms must be an integer >= 1"),
            std::string::npos);
}

TEST(KvTransferConfig, ObjTierVllmNestedStoreConfig) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_tier(R"({"type":"obj","store_config":{"bucket":"kv","endpoint_override":"minio:9000",)"
                R"("scheme":"https","access_key":"AK","secret_key":"SK","session_token":"",)"
                R"("region":"us-east-1","ca_bundle":"/etc/ca.pem"},"prefix":"p/","io_threads":2,)"
                R"("enable_kv_events":true})"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const offload::ObjTierConfig& obj = c->secondary_tiers[0].as<offload::ObjTierConfig>();
  EXPECT_EQ(obj.bucket, "kv");
  EXPECT_EQ(obj.endpoint, "minio:9000");
  EXPECT_EQ(obj.scheme, "https");
  EXPECT_EQ(obj.ca_bundle, "/etc/ca.pem");
  EXPECT_EQ(obj.access_key, "AK");
  EXPECT_EQ(obj.prefix, "p/");
  EXPECT_EQ(obj.io_threads, 2);
  // Defaults: credentials may come from the environment at startup.
  c = parse_kv_transfer_config(
      with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"http://h:1"})"), 16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->secondary_tiers[0].as<offload::ObjTierConfig>().io_threads, 4);
  EXPECT_EQ(c->secondary_tiers[0].as<offload::ObjTierConfig>().access_key, "");
  EXPECT_EQ(c->secondary_tiers[0].as<offload::ObjTierConfig>().request_timeout_ms, 30000);
}

TEST(KvTransferConfig, ObjTierErrorsNameTheKeyPath) {
  const std::string t0 = "kv_connector_extra_config.secondary_tiers[0]";
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","endpoint_override":"http://h:1"})"))
                .find(t0 + ".bucket (or " + t0 + ".store_config.bucket) is required"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"kv"})")).find("endpoint_override"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"h",)"
                               R"("bukket":1})"))
                .find("unknown key " + t0 + ".bukket"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","endpoint_override":"h",)"
                               R"("store_config":{"bucket":"kv","prefix":"p/"}})"))
                .find("unknown key " + t0 + ".store_config.prefix"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","endpoint_override":"h",)"
                               R"("store_config":{"bucket":5}})"))
                .find(t0 + ".store_config.bucket must be a string, got 5"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"a","endpoint_override":"h",)"
                               R"("store_config":{"bucket":"b"}})"))
                .find(t0 + ".bucket and " + t0 + ".store_config.bucket are both set"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"h",)"
                               R"("store_config":[]})"))
                .find(t0 + ".store_config must be an object"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"h",)"
                               R"("io_threads":0})"))
                .find(t0 + ".io_threads must be an integer >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"kv","endpoint_override":"h",)"
                               R"("scheme":"ftp"})"))
                .find(t0 + ".scheme must be \"http\" or \"https\""),
            std::string::npos);
  EXPECT_NE(error_of(with_tier(R"({"type":"obj","bucket":"","endpoint_override":"h"})"))
                .find(t0 + ".bucket is empty"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

std::string with_p2p(const std::string& entry) {
  return with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                    R"("secondary_tiers":[{"type":"p2p")" +
                    entry + "}]}");
}

TEST(KvTransferConfig, P2pTierIssueExample) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(
      with_p2p(R"(,"host":"127.0.0.1","port":5710,"peers":["127.0.0.1:5711","[::1]:5712"],)"
               R"("secret":"s3cr3t-s3cr3t-s3cr3t","max_bytes":1000000,"num_threads":3,)"
               R"("connect_timeout_ms":200,"io_timeout_ms":3000,"miss_ttl_ms":0,)"
               R"("remote_wait_ms":2000,"advertise_host":"10.0.0.7","backends":["UCX"])"),
      16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->secondary_tiers.size(), 1u);
  EXPECT_EQ(c->secondary_tiers[0].type, "p2p");
  const offload::P2pTierConfig& p2p = c->secondary_tiers[0].as<offload::P2pTierConfig>();
  EXPECT_EQ(p2p.host, "127.0.0.1");
  EXPECT_EQ(p2p.port, 5710);
  EXPECT_EQ(p2p.peers, (std::vector<std::string>{"127.0.0.1:5711", "[::1]:5712"}));
  EXPECT_EQ(p2p.secret, "s3cr3t-s3cr3t-s3cr3t");
  EXPECT_EQ(p2p.max_bytes, 1000000);
  EXPECT_EQ(p2p.num_threads, 3);
  EXPECT_EQ(p2p.connect_timeout_ms, 200);
  EXPECT_EQ(p2p.io_timeout_ms, 3000);
  EXPECT_EQ(p2p.miss_ttl_ms, 0);
  EXPECT_EQ(p2p.remote_wait_ms, 2000);
  EXPECT_EQ(p2p.advertised_host(), "10.0.0.7");
}

TEST(KvTransferConfig, P2pTierDefaults) {
  StatusOr<offload::OffloadConfig> c = parse_kv_transfer_config(with_p2p(""), 16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const offload::P2pTierConfig& p2p = c->secondary_tiers[0].as<offload::P2pTierConfig>();
  EXPECT_EQ(p2p.host, "127.0.0.1");
  EXPECT_EQ(p2p.port, 5710);
  EXPECT_TRUE(p2p.peers.empty());
  EXPECT_EQ(p2p.secret, "");  // $STRATA_P2P_SECRET, checked when the tier starts
  EXPECT_EQ(p2p.num_threads, 4);
  EXPECT_EQ(p2p.advertised_host(), "127.0.0.1");
}

TEST(KvTransferConfig, P2pTierErrorsNameTheKeyPath) {
  const std::string t0 = "kv_connector_extra_config.secondary_tiers[0]";
  EXPECT_NE(error_of(with_p2p(R"(,"prot":5710)")).find("unknown key " + t0 + ".prot"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"port":"5710")")).find(t0 + ".port must be an integer >= 0"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"port":70000)")).find(t0 + ".port must be in [0, 65535]"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"peers":"127.0.0.1:5711")")).find(t0 + ".peers must be an array"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"peers":[5711])")).find(t0 + ".peers[0] must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"peers":["a:1","b"])")).find(t0 + ".peers[1]: peer address 'b'"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"secret":7)")).find(t0 + ".secret must be a string"),
            std::string::npos);
  EXPECT_NE(
      error_of(with_p2p(R"(,"num_threads":0)")).find(t0 + ".num_threads must be an integer >= 1"),
      std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"io_timeout_ms":0)")).find(t0 + ".io_timeout_ms"),
            std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"host":"")")).find(t0 + ".host is empty"), std::string::npos);
  EXPECT_NE(error_of(with_p2p(R"(,"backends":"UCX")")).find(t0 + ".backends must be an array"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::server
