#include "offload/tiers/p2p/peer_allowlist.h"

#include <gtest/gtest.h>

namespace strata::offload {
namespace {

PeerAllowlist allowlist(std::vector<std::string> allowed, std::vector<std::string> peers = {}) {
  StatusOr<PeerAllowlist> a = PeerAllowlist::create(allowed, peers);
  EXPECT_TRUE(a.ok()) << a.status().message();
  return a.ok() ? *a : PeerAllowlist();
}

TEST(PeerAllowlist, EmptyAllowsNothing) {
  const PeerAllowlist a = allowlist({});
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.allows("127.0.0.1", 5710));
  EXPECT_FALSE(a.allows("localhost", 5710));
}

TEST(PeerAllowlist, ConfiguredPeersAreAllowedAtTheirPortOnly) {
  const PeerAllowlist a = allowlist({}, {"10.0.0.5:5710", "kv-b.internal:5711", "[fd00::7]:5712"});
  EXPECT_TRUE(a.allows("10.0.0.5", 5710));
  EXPECT_FALSE(a.allows("10.0.0.5", 22));
  EXPECT_FALSE(a.allows("10.0.0.6", 5710));
  EXPECT_TRUE(a.allows("KV-B.Internal.", 5711));
  EXPECT_FALSE(a.allows("kv-b.internal", 5710));
  EXPECT_TRUE(a.allows("fd00::7", 5712));
  EXPECT_TRUE(a.allows("[fd00:0::7]", 5712));
  EXPECT_FALSE(a.allows("fd00::8", 5712));
}

TEST(PeerAllowlist, Ipv4Networks) {
  const PeerAllowlist a = allowlist({"10.0.0.0/8:5710", "192.168.1.128/25:*", "172.16.0.1:80"});
  EXPECT_TRUE(a.allows("10.255.3.4", 5710));
  EXPECT_FALSE(a.allows("11.0.0.1", 5710));
  EXPECT_FALSE(a.allows("10.0.0.1", 5711));
  EXPECT_TRUE(a.allows("192.168.1.200", 1));
  EXPECT_TRUE(a.allows("192.168.1.128", 65535));
  EXPECT_FALSE(a.allows("192.168.1.127", 5710));
  EXPECT_TRUE(a.allows("172.16.0.1", 80));
  EXPECT_FALSE(a.allows("172.16.0.2", 80));
  // IPv4-mapped IPv6 is the IPv4 address.
  EXPECT_TRUE(a.allows("::ffff:10.1.2.3", 5710));
  EXPECT_TRUE(a.allows("[::ffff:10.1.2.3]", 5710));
  EXPECT_FALSE(a.allows("::ffff:11.1.2.3", 5710));
  // Spellings inet_pton rejects are names, and no name rule matches them.
  EXPECT_FALSE(a.allows("10.1", 5710));
  EXPECT_FALSE(a.allows("167772161", 5710));  // 10.0.0.1 as one integer
  EXPECT_FALSE(a.allows("0x0a.0.0.1", 5710));
  EXPECT_FALSE(a.allows("010.0.0.1", 5710));
}

TEST(PeerAllowlist, Ipv6Networks) {
  const PeerAllowlist a = allowlist({"[fd00::/8]:5700-5799", "[2001:db8::1]:5710", "[::/0]:9"});
  EXPECT_TRUE(a.allows("fd12:3456::1", 5700));
  EXPECT_TRUE(a.allows("fdff::", 5799));
  EXPECT_FALSE(a.allows("fd12:3456::1", 5800));
  EXPECT_FALSE(a.allows("fe80::1", 5710));
  EXPECT_TRUE(a.allows("2001:db8::1", 5710));
  EXPECT_FALSE(a.allows("2001:db8::2", 5710));
  EXPECT_TRUE(a.allows("::1", 9));  // ::/0 is every IPv6 address...
  EXPECT_FALSE(a.allows("127.0.0.1", 9));  // ...but not IPv4 ones
  EXPECT_FALSE(a.allows("::ffff:127.0.0.1", 9));  // mapped counts as IPv4
}

TEST(PeerAllowlist, NamesMatchNamesOnly) {
  const PeerAllowlist a = allowlist({"prefill-0.kv.svc:5710", "localhost:*"});
  EXPECT_TRUE(a.allows("prefill-0.kv.svc", 5710));
  EXPECT_TRUE(a.allows("Prefill-0.KV.svc.", 5710));
  EXPECT_FALSE(a.allows("prefill-1.kv.svc", 5710));
  EXPECT_FALSE(a.allows("evil.prefill-0.kv.svc", 5710));
  EXPECT_FALSE(a.allows("prefill-0.kv.svc.evil", 5710));
  EXPECT_TRUE(a.allows("localhost", 22));
  EXPECT_FALSE(a.allows("127.0.0.1", 22));  // never resolved: an address is not the name
}

TEST(PeerAllowlist, BadPortsAndHostsAreRejected) {
  const PeerAllowlist a = allowlist({"10.0.0.1:*"});
  EXPECT_FALSE(a.allows("10.0.0.1", 0));
  EXPECT_FALSE(a.allows("10.0.0.1", 65536));
  EXPECT_FALSE(a.allows("10.0.0.1", -1));
  EXPECT_FALSE(a.allows("", 5710));
}

TEST(PeerAllowlist, EntriesParseOrSayWhatIsWrong) {
  const std::pair<const char*, const char*> bad[] = {
      {"10.0.0.1", "no port"},
      {"10.0.0.1:0", "the port must be"},
      {"10.0.0.1:70000", "the port must be"},
      {"10.0.0.1:6000-5000", "the port must be"},
      {"10.0.0.1:abc", "the port must be"},
      {"10.0.0.0/33:1", "prefix length must be 0..32"},
      {"[fd00::/129]:1", "prefix length must be 0..128"},
      {"fd00::1:5710", "IPv6 addresses go in brackets"},
      {"[fd00::1]5710", "[address]:PORTS"},
      {"host/8:1", "needs an address"},
      {"bad host:1", "not a host name"},
      {":5710", "no host"},
  };
  for (const auto& [entry, why] : bad) {
    StatusOr<PeerRule> r = parse_peer_rule(entry);
    ASSERT_FALSE(r.ok()) << entry;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(entry), std::string::npos) << r.status().message();
  }
  StatusOr<PeerAllowlist> a = PeerAllowlist::create({"10.0.0.1:1", "nope"}, {});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("allowed_remote_peers[1]"), std::string::npos);
  a = PeerAllowlist::create({}, {"10.0.0.0/8:5710"});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("must be one host:port"), std::string::npos);
}

}  // namespace
}  // namespace strata::offload
