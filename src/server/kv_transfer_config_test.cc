#include "server/kv_transfer_config.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(c->secondary_tiers[0].fs.root_dir, "/tmp/kv");
  EXPECT_EQ(c->secondary_tiers[0].fs.n_read_threads, 3);
  EXPECT_EQ(c->secondary_tiers[0].fs.n_write_threads, 2);
  EXPECT_EQ(c->secondary_tiers[0].fs.max_bytes, 1000000);
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
  EXPECT_EQ(c->secondary_tiers[0].module_path, "/opt/libm.so");
  EXPECT_NE(c->secondary_tiers[0].config_json.find("\"max_bytes\":5"), std::string::npos);
  EXPECT_NE(error_of(with_extra(R"({"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1,)"
                                R"("secondary_tiers":[{"type":"memory","module_path":7}]})"))
                .find("secondary_tiers[0].module_path must be a string"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::server
