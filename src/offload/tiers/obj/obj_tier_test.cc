// The object-store tier against a real S3-compatible server (s3rver, which
// verifies SigV4 signatures) on 127.0.0.1, plus a fault-injecting proxy in
// front of it for 500s, cut-short bodies and a hung server. Servers are
// started and stopped by the tests (s3_test_server.h); without node or the
// npm package the server tests skip and say why.
#include "offload/tiers/obj/obj_tier.h"
#include "offload/tiers/common/retrying_tier.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "offload/tiers/fs/fs_tier.h"
#include "offload/tiers/obj/s3_client.h"
#include "offload/tiers/testing/s3_test_server.h"
#include "offload/tiers/testing/tier_test_util.h"

namespace strata::offload {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HostMemory;
using testing::load;
using testing::load_one;
using testing::settled_lookup;
using testing::small_format;
using testing::store;
using testing::store_one;
using testing::TempDir;

constexpr char kBucket[] = "strata-kv";
constexpr char kModel[] = "obj-test-model";

ChunkKey key_of(uint64_t i) { return {0x9e3779b97f4a7c15ull * (i + 1), 0xc0ffee00ull + i}; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

ObjTierConfig base_config(const std::string& endpoint, const std::string& prefix) {
  ObjTierConfig c;
  c.bucket = kBucket;
  c.endpoint = endpoint;
  c.prefix = prefix;
  c.access_key = testing::kTestAccessKey;
  c.secret_key = testing::kTestSecretKey;
  c.io_threads = 2;
  c.miss_ttl_ms = 0;
  c.request_timeout_ms = 5000;
  return c;
}

// ---- without a server ----

TEST(ObjTierConfig, InvalidSettingsAreNamed) {
  const ChunkFormat format = small_format(kModel);
  HostMemory host(format, 2);
  auto error_of = [&](const ObjTierConfig& c) {
    StatusOr<std::unique_ptr<SecondaryTier>> t = make_obj_tier(c, format, host.region);
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.status().message();
  };
  ObjTierConfig c = base_config("http://127.0.0.1:9", "");
  c.bucket = "";
  EXPECT_NE(error_of(c).find("bucket"), std::string::npos);
  c = base_config("", "");
  EXPECT_NE(error_of(c).find("endpoint_override is empty"), std::string::npos);
  c = base_config("ftp://127.0.0.1:9", "");
  EXPECT_NE(error_of(c).find("scheme must be http or https"), std::string::npos);
  c = base_config("http://127.0.0.1:9/some/path", "");
  EXPECT_NE(error_of(c).find("scheme://host[:port]"), std::string::npos);
  c = base_config("http://127.0.0.1:9", "");
  c.io_threads = 0;
  EXPECT_NE(error_of(c).find("io_threads 0"), std::string::npos);
  c = base_config("http://127.0.0.1:9", "");
  c.secret_key = "";
  EXPECT_NE(error_of(c).find("secret_key is empty"), std::string::npos);
  HostMemory wrong(small_format(kModel), 1);
  wrong.region.slot_bytes -= 4;
  StatusOr<std::unique_ptr<SecondaryTier>> t =
      make_obj_tier(base_config("http://127.0.0.1:9", ""), format, wrong.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("host region slots"), std::string::npos);
}

TEST(ObjTierConfig, EndpointsParse) {
  StatusOr<S3Endpoint> e = parse_s3_endpoint("HTTP://127.0.0.1:9000/", "https");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scheme, "http");
  EXPECT_EQ(e->authority, "127.0.0.1:9000");
  e = parse_s3_endpoint("minio.local:443", "https");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->base_url(), "https://minio.local");  // curl sends Host without the default port
  e = parse_s3_endpoint("[::1]:9000", "http");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->base_url(), "http://[::1]:9000");
}

TEST(ObjTierConfig, UnreachableEndpointFailsFastSayingSo) {
  const ChunkFormat format = small_format(kModel);
  HostMemory host(format, 2);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<SecondaryTier>> t = make_obj_tier(
      base_config("http://127.0.0.1:" + std::to_string(closed_port()), ""), format, host.region);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("cannot reach http://127.0.0.1:"), std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("is the S3 server running"), std::string::npos);
  EXPECT_LT(seconds_since(start), 3.0);
}

// ---- against s3rver ----

class ObjTierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string missing = testing::s3_server_missing();
    if (!missing.empty()) {
      skip_reason_ = new std::string(missing);
      return;
    }
    data_dir_ = new TempDir();
    StatusOr<std::unique_ptr<ChildProcess>> s =
        testing::start_s3_server(data_dir_->path(), {kBucket});
    if (!s.ok()) {
      skip_reason_ = new std::string(s.status().message());
      return;
    }
    server_ = std::move(s).value().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete data_dir_;
    data_dir_ = nullptr;
    delete skip_reason_;
    skip_reason_ = nullptr;
  }

  void SetUp() override {
    if (server_ == nullptr) {
      // A missing tool skips (say why); a server that would not start fails.
      if (skip_reason_ != nullptr && skip_reason_->find("install-deps") != std::string::npos) {
        GTEST_SKIP() << *skip_reason_;
      }
      FAIL() << "s3rver did not start: " << (skip_reason_ ? *skip_reason_ : "");
    }
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = std::string("t/") + info->name() + "/";
  }

  ObjTierConfig config() const { return base_config(server_->endpoint(), prefix_); }

  std::unique_ptr<SecondaryTier> make(const ObjTierConfig& c, const HostRegion& region) {
    StatusOr<std::unique_ptr<SecondaryTier>> t = make_obj_tier(c, format_, region);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  std::string startup_error(const ObjTierConfig& c) {
    HostMemory host(format_, 1);
    StatusOr<std::unique_ptr<SecondaryTier>> t = make_obj_tier(c, format_, host.region);
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.status().message();
  }

  S3Client direct_client(const std::string& endpoint) const {
    S3ClientConfig c;
    c.endpoint = parse_s3_endpoint(endpoint, "http").value();
    c.bucket = kBucket;
    c.credentials = {testing::kTestAccessKey, testing::kTestSecretKey, ""};
    return S3Client(c);
  }
  std::string object_name(const ChunkKey& key) const {
    return obj_tier_object_name(prefix_, format_, key);
  }

  static std::string* skip_reason_;
  static TempDir* data_dir_;
  static ChildProcess* server_;
  const ChunkFormat format_ = small_format(kModel);
  std::string prefix_;
};

std::string* ObjTierTest::skip_reason_ = nullptr;
TempDir* ObjTierTest::data_dir_ = nullptr;
ChildProcess* ObjTierTest::server_ = nullptr;

TEST_F(ObjTierTest, RoundTripStoreLookupLoad) {
  HostMemory host(format_, 8);
  auto tier = make(config(), host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->name(), "obj");

  for (int i = 0; i < 3; ++i) host.fill(i, 100 + i);
  TierJobResult stored = store(*tier, {key_of(0), key_of(1), key_of(2)}, {0, 1, 2});
  EXPECT_EQ(stored.ok, std::vector<bool>({true, true, true}));
  EXPECT_EQ(stored.bytes, 3 * format_.payload_bytes());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tier->lookup(key_of(i)), LookupResult::kHit);

  TierJobResult loaded = load(*tier, {key_of(2), key_of(0), key_of(1)}, {5, 6, 7});
  EXPECT_EQ(loaded.ok, std::vector<bool>({true, true, true}));
  EXPECT_EQ(loaded.bytes, 3 * format_.payload_bytes());
  EXPECT_TRUE(host.holds(5, 102));
  EXPECT_TRUE(host.holds(6, 100));
  EXPECT_TRUE(host.holds(7, 101));

  // Named as documented, framed as header + payload.
  S3Connection conn;
  const S3Response head =
      direct_client(server_->endpoint()).head_object(conn, object_name(key_of(1)));
  EXPECT_TRUE(head.ok()) << head.describe();
  EXPECT_EQ(head.content_length, kHeaderBytes + format_.payload_bytes());
  EXPECT_EQ(object_name(key_of(1)),
            prefix_ + format_.namespace_id_hex() + "/" + key_of(1).to_hex() + ".kv");

  const TierStats s = tier->stats();
  EXPECT_EQ(s.tier, "obj");
  EXPECT_EQ(s.store_bytes, 3 * format_.payload_bytes());
  EXPECT_EQ(s.load_bytes, 3 * format_.payload_bytes());
  EXPECT_EQ(s.hit_tokens, 3 * format_.tokens_per_chunk());
  EXPECT_EQ(s.num_chunks, 3);
  EXPECT_EQ(s.load_failures + s.store_failures + s.probe_failures, 0);

  // Known keys are skipped and reported ok.
  TierJobResult again = store(*tier, {key_of(0)}, {0});
  EXPECT_EQ(again.ok, std::vector<bool>({true}));
  EXPECT_EQ(tier->stats().stores_skipped, 1);
}

TEST_F(ObjTierTest, ClientKeepsItsConnectionAlive) {
  const S3Client client = direct_client(server_->endpoint());
  S3Connection conn;
  std::vector<uint8_t> body(200000, 0x33);
  const std::span<const uint8_t> up[1] = {body};
  std::vector<uint8_t> back(body.size());
  const std::span<uint8_t> down[1] = {back};
  int64_t num_connections = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string name = prefix_ + "object" + std::to_string(i);
    for (const S3Response& r :
         {client.put_object(conn, name, up), client.head_object(conn, name),
          client.get_object(conn, name, down), client.head_object(conn, name + ".absent"),
          client.delete_object(conn, name)}) {
      EXPECT_TRUE(r.ok() || r.http_status == 404) << r.describe();
      num_connections += r.new_connections;
    }
    EXPECT_TRUE(back == body);
  }
  EXPECT_EQ(num_connections, 1);  // 20 requests, one TCP connection
}

TEST_F(ObjTierTest, ObjectsAreByteForByteTheFilesystemTiersFiles) {
  HostMemory host(format_, 2);
  host.fill(0, 7);
  auto obj = make(config(), host.region);
  ASSERT_NE(obj, nullptr);
  ASSERT_TRUE(store_one(*obj, key_of(9), 0));

  TempDir dir;
  FsTierConfig fs_config;
  fs_config.root_dir = dir.path();
  StatusOr<std::unique_ptr<SecondaryTier>> fs_tier = make_fs_tier(fs_config, format_, host.region);
  ASSERT_TRUE(fs_tier.ok()) << fs_tier.status().to_string();
  ASSERT_TRUE(store_one(**fs_tier, key_of(9), 0));

  const std::string path = fs_tier_chunk_path(dir.path(), format_, key_of(9));
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  std::vector<uint8_t> object(file.size());
  const std::span<uint8_t> pieces[1] = {object};
  S3Connection conn;
  const S3Response got =
      direct_client(server_->endpoint()).get_object(conn, object_name(key_of(9)), pieces);
  ASSERT_TRUE(got.ok()) << got.describe();
  EXPECT_EQ(got.body_bytes, static_cast<int64_t>(file.size()));
  EXPECT_TRUE(object == file);
}

TEST_F(ObjTierTest, SecondInstanceWarmStartsFromTheBucket) {
  HostMemory host(format_, 8);
  {
    auto first = make(config(), host.region);
    ASSERT_NE(first, nullptr);
    for (int i = 0; i < 4; ++i) host.fill(i, 40 + i);
    TierJobResult stored =
        store(*first, {key_of(0), key_of(1), key_of(2), key_of(3)}, {0, 1, 2, 3});
    EXPECT_EQ(stored.ok, std::vector<bool>(4, true));
  }
  HostMemory other_host(format_, 8);
  auto second = make(config(), other_host.region);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->lookup(key_of(2)), LookupResult::kRetry);  // probed, not guessed
  for (int i = 0; i < 4; ++i) EXPECT_EQ(settled_lookup(*second, key_of(i)), LookupResult::kHit);
  EXPECT_EQ(settled_lookup(*second, key_of(77)), LookupResult::kMiss);
  TierJobResult loaded = load(*second, {key_of(3), key_of(0)}, {4, 5});
  EXPECT_EQ(loaded.ok, std::vector<bool>({true, true}));
  EXPECT_TRUE(other_host.holds(4, 43));
  EXPECT_TRUE(other_host.holds(5, 40));
  const TierStats s = second->stats();
  EXPECT_EQ(s.chunk_hits, 4);
  EXPECT_EQ(s.chunk_lookups, 5);
  EXPECT_EQ(s.hit_tokens, 2 * format_.tokens_per_chunk());
}

TEST_F(ObjTierTest, NegativeAnswersExpireSoLaterStoresAreFound) {
  HostMemory host(format_, 2);
  ObjTierConfig c = config();
  c.miss_ttl_ms = 200;
  auto reader = make(c, host.region);
  auto writer = make(config(), host.region);
  ASSERT_NE(reader, nullptr);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(settled_lookup(*reader, key_of(5)), LookupResult::kMiss);
  host.fill(0, 5);
  ASSERT_TRUE(store_one(*writer, key_of(5), 0));
  EXPECT_EQ(reader->lookup(key_of(5)), LookupResult::kMiss);  // still within the ttl
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(settled_lookup(*reader, key_of(5)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*reader, key_of(5), 1));
  EXPECT_TRUE(host.holds(1, 5));
}

TEST_F(ObjTierTest, ManyChunksOnSeveralThreads) {
  constexpr int kChunks = 48;
  HostMemory host(format_, 2 * kChunks);
  ObjTierConfig c = config();
  c.io_threads = 4;
  auto tier = make(c, host.region);
  ASSERT_NE(tier, nullptr);
  std::vector<ChunkKey> keys;
  std::vector<int64_t> slots;
  std::vector<int64_t> load_slots;
  for (int i = 0; i < kChunks; ++i) {
    host.fill(i, 1000 + i);
    keys.push_back(key_of(200 + i));
    slots.push_back(i);
    load_slots.push_back(kChunks + i);
  }
  EXPECT_EQ(store(*tier, keys, slots).ok, std::vector<bool>(kChunks, true));
  EXPECT_EQ(load(*tier, keys, load_slots).ok, std::vector<bool>(kChunks, true));
  for (int i = 0; i < kChunks; ++i) EXPECT_TRUE(host.holds(kChunks + i, 1000 + i)) << i;
}

TEST_F(ObjTierTest, PrefixWithCharactersThatNeedEncoding) {
  HostMemory host(format_, 2);
  ObjTierConfig c = config();
  // Not !'()*: s3rver signs query values with encodeURIComponent, which leaves
  // them unencoded, unlike AWS (sigv4_botocore_test covers them against botocore).
  c.prefix = prefix_ + "team a/kv+cache=1 ~x/\xc3\xbc/";
  auto tier = make(c, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 3);
  ASSERT_TRUE(store_one(*tier, key_of(3), 0));  // s3rver checks each request's signature
  auto fresh = make(c, host.region);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(settled_lookup(*fresh, key_of(3)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*fresh, key_of(3), 1));
  EXPECT_TRUE(host.holds(1, 3));
}

TEST_F(ObjTierTest, WrongSecretFailsAtStartupSayingSo) {
  ObjTierConfig c = config();
  c.secret_key = "not-the-secret";
  const std::string error = startup_error(c);
  EXPECT_NE(error.find("403 SignatureDoesNotMatch"), std::string::npos) << error;
  EXPECT_NE(error.find("secret key is wrong for access key 'STRATA-TEST-KEY'"), std::string::npos)
      << error;
}

TEST_F(ObjTierTest, UnknownAccessKeyFailsAtStartupSayingSo) {
  ObjTierConfig c = config();
  c.access_key = "NOBODY";
  const std::string error = startup_error(c);
  EXPECT_NE(error.find("access key 'NOBODY' is not known"), std::string::npos) << error;
  EXPECT_NE(error.find("InvalidAccessKeyId"), std::string::npos) << error;
}

TEST_F(ObjTierTest, MissingBucketFailsAtStartupSayingSo) {
  ObjTierConfig c = config();
  c.bucket = "no-such-bucket";
  const std::string error = startup_error(c);
  EXPECT_NE(error.find("bucket 'no-such-bucket' does not exist at " + server_->endpoint()),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("NoSuchBucket"), std::string::npos) << error;
}

// Restores (or removes) an environment variable when it goes out of scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST_F(ObjTierTest, CredentialsComeFromTheConfigElseTheEnvironment) {
  HostMemory host(format_, 1);
  ObjTierConfig from_env = config();
  from_env.access_key.clear();
  from_env.secret_key.clear();
  {
    ScopedEnv id("AWS_ACCESS_KEY_ID", testing::kTestAccessKey);
    ScopedEnv secret("AWS_SECRET_ACCESS_KEY", testing::kTestSecretKey);
    ScopedEnv token("AWS_SESSION_TOKEN", nullptr);
    EXPECT_NE(make(from_env, host.region), nullptr);
  }
  {
    // The config's pair wins over the environment's.
    ScopedEnv id("AWS_ACCESS_KEY_ID", "NOBODY");
    ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "wrong");
    EXPECT_NE(make(config(), host.region), nullptr);
    EXPECT_NE(startup_error(from_env).find("'NOBODY' is not known"), std::string::npos);
  }
  {
    ScopedEnv id("AWS_ACCESS_KEY_ID", nullptr);
    ScopedEnv secret("AWS_SECRET_ACCESS_KEY", nullptr);
    EXPECT_NE(startup_error(from_env).find("no credentials"), std::string::npos);
  }
}

TEST_F(ObjTierTest, CorruptOrWrongSizeObjectsAreMissesAndCorruptOnesAreDeleted) {
  HostMemory host(format_, 2);
  S3Client client = direct_client(server_->endpoint());
  S3Connection conn;
  // Right size, wrong bytes (a header that does not verify).
  std::vector<uint8_t> garbage(static_cast<size_t>(kHeaderBytes + format_.payload_bytes()), 0x5a);
  const std::span<const uint8_t> pieces[1] = {garbage};
  ASSERT_TRUE(client.put_object(conn, object_name(key_of(1)), pieces).ok());
  // Wrong size.
  const std::span<const uint8_t> short_piece[1] = {std::span<const uint8_t>(garbage).first(100)};
  ASSERT_TRUE(client.put_object(conn, object_name(key_of(2)), short_piece).ok());

  auto tier = make(config(), host.region);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(settled_lookup(*tier, key_of(2)), LookupResult::kMiss);
  EXPECT_EQ(settled_lookup(*tier, key_of(1)), LookupResult::kHit);  // HEAD sees the right size
  EXPECT_FALSE(load_one(*tier, key_of(1), 0));
  EXPECT_EQ(tier->stats().load_failures, 1);
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kMiss);                       // forgotten
  EXPECT_EQ(client.head_object(conn, object_name(key_of(1))).http_status, 404);  // deleted
  // A later store puts the right bytes back.
  host.fill(0, 11);
  ASSERT_TRUE(store_one(*tier, key_of(1), 0));
  EXPECT_TRUE(load_one(*tier, key_of(1), 1));
  EXPECT_TRUE(host.holds(1, 11));
}

// ---- faults: a server that dies, answers 500, cuts bodies short, hangs ----

TEST_F(ObjTierTest, ServerDownMidRunFailsJobsFastAndRecovers) {
  TempDir dir;
  StatusOr<std::unique_ptr<ChildProcess>> started = testing::start_s3_server(dir.path(), {kBucket});
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  std::unique_ptr<ChildProcess> server = std::move(started).value();
  const int port = server->port();
  HostMemory host(format_, 4);
  auto tier = make(base_config(server->endpoint(), prefix_), host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 1);
  ASSERT_TRUE(store_one(*tier, key_of(1), 0));

  server->kill_now();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(load_one(*tier, key_of(1), 1));
  host.fill(2, 2);
  EXPECT_FALSE(store_one(*tier, key_of(2), 2));
  EXPECT_EQ(settled_lookup(*tier, key_of(3)), LookupResult::kMiss);
  EXPECT_LT(seconds_since(start), 3.0);                     // refused connections fail at once
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kMiss);  // the failed load forgot it
  TierStats s = tier->stats();
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.store_failures, 1);
  EXPECT_EQ(s.probe_failures, 1);

  // Back on the same port with the same data: the tier carries on.
  started = testing::start_s3_server(dir.path(), {kBucket}, port);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  server = std::move(started).value();
  EXPECT_TRUE(store_one(*tier, key_of(2), 2));
  EXPECT_EQ(settled_lookup(*tier, key_of(1)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*tier, key_of(1), 3));
  EXPECT_TRUE(host.holds(3, 1));
}

class ObjTierFaultTest : public ObjTierTest {
 protected:
  void SetUp() override {
    ObjTierTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    StatusOr<std::unique_ptr<ChildProcess>> p = testing::start_fault_proxy(server_->port());
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    proxy_ = std::move(p).value();
  }
  void TearDown() override {
    if (proxy_ != nullptr) {
      EXPECT_TRUE(testing::set_fault_mode(*proxy_, "pass").ok());
    }
  }
  void set_mode(const std::string& mode) {
    const Status s = testing::set_fault_mode(*proxy_, mode);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  ObjTierConfig proxied_config() const { return base_config(proxy_->endpoint(), prefix_); }

  std::unique_ptr<ChildProcess> proxy_;
};

TEST_F(ObjTierFaultTest, ServerErrorsAreMissesAndFailedJobs) {
  HostMemory host(format_, 4);
  auto tier = make(proxied_config(), host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 1);
  ASSERT_TRUE(store_one(*tier, key_of(1), 0));

  set_mode("error500");
  EXPECT_EQ(settled_lookup(*tier, key_of(2)), LookupResult::kMiss);
  EXPECT_FALSE(load_one(*tier, key_of(1), 1));
  EXPECT_EQ(tier->lookup(key_of(1)), LookupResult::kMiss);  // the failed load forgot it
  host.fill(2, 3);
  EXPECT_FALSE(store_one(*tier, key_of(3), 2));
  TierStats s = tier->stats();
  EXPECT_EQ(s.probe_failures, 1);
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.store_failures, 1);
  EXPECT_EQ(s.load_bytes, 0);

  set_mode("pass");
  EXPECT_TRUE(store_one(*tier, key_of(3), 2));
  EXPECT_EQ(settled_lookup(*tier, key_of(1)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*tier, key_of(1), 3));
  EXPECT_TRUE(host.holds(3, 1));
}

// One 500 answering the startup probe is not an outage: the tier starts
// down, is retried, and serves once the store answers again.
TEST_F(ObjTierFaultTest, TransientErrorAtStartupStartsTheTierDownThenUp) {
  HostMemory host(format_, 4);
  const ObjTierConfig c = proxied_config();
  set_mode("error500_once");
  const StatusOr<std::unique_ptr<SecondaryTier>> direct = make_obj_tier(c, format_, host.region);
  ASSERT_FALSE(direct.ok());  // the probe saw the 500
  EXPECT_EQ(direct.status().code(), StatusCode::kUnavailable) << direct.status().to_string();

  set_mode("error500_once");
  StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry(
      "obj", [&] { return make_obj_tier(c, format_, host.region); }, {20, 100});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  SecondaryTier& tier = **t;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!tier.stats().is_up && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(tier.stats().is_up);
  EXPECT_EQ(tier.stats().start_failures, 1);
  host.fill(0, 4);
  EXPECT_TRUE(store_one(tier, key_of(1), 0));
  EXPECT_EQ(settled_lookup(tier, key_of(1)), LookupResult::kHit);
  EXPECT_TRUE(load_one(tier, key_of(1), 1));
  EXPECT_TRUE(host.holds(1, 4));
}

// Wrong credentials and a missing bucket are settings to fix: no retrying.
TEST_F(ObjTierTest, ConfigurationErrorsStillFailFastWithRetries) {
  HostMemory host(format_, 1);
  ObjTierConfig wrong_secret = config();
  wrong_secret.secret_key = "not-the-secret";
  ObjTierConfig no_bucket = config();
  no_bucket.bucket = "no-such-bucket";
  for (const ObjTierConfig& c : {wrong_secret, no_bucket}) {
    StatusOr<std::unique_ptr<SecondaryTier>> t = start_tier_or_retry(
        "obj", [&] { return make_obj_tier(c, format_, host.region); }, {20, 100});
    EXPECT_FALSE(t.ok());
    EXPECT_FALSE(is_transient_start_error(t.status())) << t.status().to_string();
  }
}

TEST_F(ObjTierFaultTest, TruncatedBodyFailsTheLoadAndForgetsTheKey) {
  HostMemory host(format_, 4);
  ObjTierConfig c = proxied_config();
  c.miss_ttl_ms = 100;
  auto tier = make(c, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 4);
  ASSERT_TRUE(store_one(*tier, key_of(4), 0));

  set_mode("truncate");
  EXPECT_FALSE(load_one(*tier, key_of(4), 1));
  EXPECT_EQ(tier->stats().load_failures, 1);
  EXPECT_EQ(tier->lookup(key_of(4)), LookupResult::kMiss);  // forgotten at once

  // The object itself was fine and is still there.
  set_mode("pass");
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(settled_lookup(*tier, key_of(4)), LookupResult::kHit);
  EXPECT_TRUE(load_one(*tier, key_of(4), 2));
  EXPECT_TRUE(host.holds(2, 4));
}

TEST_F(ObjTierFaultTest, HungServerTimesOutWithoutBlockingTheEngineThread) {
  HostMemory host(format_, 4);
  ObjTierConfig c = proxied_config();
  c.request_timeout_ms = 1500;
  auto tier = make(c, host.region);
  ASSERT_NE(tier, nullptr);
  host.fill(0, 6);
  ASSERT_TRUE(store_one(*tier, key_of(6), 0));

  set_mode("stall");
  auto start = std::chrono::steady_clock::now();
  tier->submit_load(TierJob{9001, {key_of(6)}, {1}});
  EXPECT_EQ(tier->lookup(key_of(7)), LookupResult::kRetry);
  EXPECT_LT(seconds_since(start), 0.5);  // queued, not waited for (a request takes 1.5 s)
  tier->drain();
  EXPECT_GT(seconds_since(start), 1.4);  // the load waited for its timeout...
  EXPECT_LT(seconds_since(start), 5.0);  // ...and no longer
  std::vector<TierJobResult> results = tier->poll_finished();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].ok, std::vector<bool>({false}));
  EXPECT_EQ(settled_lookup(*tier, key_of(7)), LookupResult::kMiss);
  const TierStats s = tier->stats();
  EXPECT_EQ(s.load_failures, 1);
  EXPECT_EQ(s.probe_failures, 1);
}

}  // namespace
}  // namespace strata::offload
