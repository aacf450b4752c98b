#include "offload/tiers/obj/s3_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <ctime>

#include "base/check.h"

namespace strata::offload {
namespace {

constexpr size_t kMaxTextBody = 64 * 1024;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    STRATA_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) << "curl_global_init failed";
  });
}

// Text between <tag> and </tag> in an S3 XML answer, or "".
std::string xml_element(const std::string& xml, const std::string& tag) {
  const std::string open = "<" + tag + ">";
  const size_t start = xml.find(open);
  if (start == std::string::npos) return "";
  const size_t end = xml.find("</" + tag + ">", start);
  if (end == std::string::npos) return "";
  return xml.substr(start + open.size(), end - start - open.size());
}

// Where the download goes: caller's pieces (object bytes) or a bounded string
// (listings and error documents).
struct Sink {
  CURL* curl = nullptr;
  std::span<const std::span<uint8_t>> pieces;
  size_t piece_idx = 0;
  size_t piece_offset = 0;
  int64_t received = 0;
  bool is_overflow = false;
  std::string text;
};

size_t write_body(char* data, size_t size, size_t nmemb, void* user) {
  auto& sink = *static_cast<Sink*>(user);
  const size_t n = size * nmemb;
  long status = 0;
  curl_easy_getinfo(sink.curl, CURLINFO_RESPONSE_CODE, &status);
  const bool is_object_body = status >= 200 && status < 300 && !sink.pieces.empty();
  if (!is_object_body) {
    const size_t room = kMaxTextBody - std::min(kMaxTextBody, sink.text.size());
    sink.text.append(data, std::min(room, n));
    return n;
  }
  size_t done = 0;
  while (done < n) {
    if (sink.piece_idx == sink.pieces.size()) {
      sink.is_overflow = true;
      return 0;  // longer than expected: abort the transfer
    }
    std::span<uint8_t> piece = sink.pieces[sink.piece_idx];
    const size_t take = std::min(n - done, piece.size() - sink.piece_offset);
    std::memcpy(piece.data() + sink.piece_offset, data + done, take);
    done += take;
    sink.piece_offset += take;
    sink.received += static_cast<int64_t>(take);
    if (sink.piece_offset == piece.size()) {
      ++sink.piece_idx;
      sink.piece_offset = 0;
    }
  }
  return n;
}

struct Source {
  std::span<const std::span<const uint8_t>> pieces;
  int64_t total = 0;
  int64_t offset = 0;  // bytes already handed to curl
};

size_t read_body(char* buffer, size_t size, size_t nitems, void* user) {
  auto& src = *static_cast<Source*>(user);
  const size_t room = size * nitems;
  size_t written = 0;
  int64_t skip = src.offset;
  for (std::span<const uint8_t> piece : src.pieces) {
    const auto piece_bytes = static_cast<int64_t>(piece.size());
    if (skip >= piece_bytes) {
      skip -= piece_bytes;
      continue;
    }
    const size_t take = std::min(room - written, static_cast<size_t>(piece_bytes - skip));
    std::memcpy(buffer + written, piece.data() + skip, take);
    written += take;
    skip = 0;
    if (written == room) break;
  }
  src.offset += static_cast<int64_t>(written);
  return written;
}

// Lets curl resend the body when it retries on a fresh connection (a reused
// keep-alive connection that the server had closed).
int seek_body(void* user, curl_off_t offset, int origin) {
  auto& src = *static_cast<Source*>(user);
  if (origin != SEEK_SET || offset < 0 || offset > src.total) return CURL_SEEKFUNC_CANTSEEK;
  src.offset = offset;
  return CURL_SEEKFUNC_OK;
}

void add_header(curl_slist*& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list, line.c_str());
  STRATA_CHECK(next != nullptr) << "curl_slist_append failed";
  list = next;
}

}  // namespace

StatusOr<S3Endpoint> parse_s3_endpoint(const std::string& endpoint,
                                       const std::string& default_scheme) {
  S3Endpoint out;
  std::string rest = endpoint;
  const size_t sep = endpoint.find("://");
  out.scheme = sep == std::string::npos ? default_scheme : endpoint.substr(0, sep);
  if (sep != std::string::npos) rest = endpoint.substr(sep + 3);
  for (char& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.scheme != "http" && out.scheme != "https") {
    return invalid_argument("endpoint '" + endpoint + "': scheme must be http or https, got '" +
                            out.scheme + "'");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string::npos) {
    return invalid_argument("endpoint '" + endpoint +
                            "' must be scheme://host[:port] (no path, query or user)");
  }
  const std::string default_port = out.scheme == "http" ? ":80" : ":443";
  if (rest.size() > default_port.size() &&
      rest.compare(rest.size() - default_port.size(), default_port.size(), default_port) == 0) {
    rest.resize(rest.size() - default_port.size());  // curl sends Host without it
  }
  out.authority = rest;
  return out;
}

std::string S3Response::describe() const {
  if (is_transport_error) {
    return (is_truncated ? "body cut short: " : "request failed: ") + transport_error;
  }
  std::string out = "HTTP " + std::to_string(http_status);
  if (!error_code.empty()) out += " " + error_code;
  if (!error_message.empty()) out += ": " + error_message;
  return out;
}

S3Connection::S3Connection() {
  init_curl_once();
  CURLSH* share = curl_share_init();
  STRATA_CHECK(share != nullptr) << "curl_share_init failed";
  STRATA_CHECK(curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) == CURLSHE_OK)
      << "this libcurl cannot share a connection cache";
  share_ = share;
}

S3Connection::~S3Connection() { curl_share_cleanup(static_cast<CURLSH*>(share_)); }

S3Client::S3Client(S3ClientConfig config) : config_(std::move(config)) {}

struct S3Client::Transfer {
  std::string method;
  std::string key;  // "" = the bucket itself
  sigv4::Pairs query;
  std::span<const std::span<const uint8_t>> upload;  // PUT body
  std::span<const std::span<uint8_t>> download;      // GET into these
};

S3Response S3Client::perform(S3Connection& conn, const Transfer& t) const {
  // A fresh easy handle per request; the live connection comes from the
  // connection's share (see S3Connection in the header for why).
  const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> handle(curl_easy_init(),
                                                                   &curl_easy_cleanup);
  STRATA_CHECK(handle != nullptr) << "curl_easy_init failed";
  CURL* curl = handle.get();
  curl_easy_setopt(curl, CURLOPT_SHARE, conn.share());

  sigv4::Request req;
  req.method = t.method;
  req.path = "/" + config_.bucket + (t.key.empty() ? "" : "/" + t.key);
  req.query = t.query;
  req.headers = {{"host", config_.endpoint.authority}};
  Source source{t.upload};
  for (std::span<const uint8_t> p : t.upload) source.total += static_cast<int64_t>(p.size());
  req.payload_sha256 =
      t.upload.empty() ? std::string(sigv4::kEmptySha256) : sigv4::sha256_hex(t.upload);
  const sigv4::Signed sig = sigv4::sign(req, config_.credentials, config_.region, "s3",
                                        sigv4::amz_date(static_cast<int64_t>(std::time(nullptr))));

  std::string url = config_.endpoint.base_url() + sigv4::uri_encode(req.path, true);
  if (!req.query.empty()) url += "?" + sigv4::canonical_query(req.query);
  curl_slist* headers = nullptr;
  add_header(headers, "Host: " + config_.endpoint.authority);
  for (const auto& [name, value] : sig.added_headers) add_header(headers, name + ": " + value);
  add_header(headers, "Expect:");  // no 100-continue round trip before a PUT body
  add_header(headers, "Accept:");

  Sink sink;
  sink.curl = curl;
  sink.pieces = t.download;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.request_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  if (!config_.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_bundle.c_str());
  if (t.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (t.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(source.total));
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &source);
  } else if (t.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, t.method.c_str());
  }

  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);

  S3Response out;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
  curl_off_t length = -1;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  out.content_length = static_cast<int64_t>(length);
  out.body_bytes = sink.received;
  long num_connects = 0;
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &num_connects);
  out.new_connections = num_connects;
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && sink.is_overflow)) {
    out.is_transport_error = true;
    out.is_truncated = rc == CURLE_PARTIAL_FILE;
    out.transport_error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    out.transport_error += " (" + t.method + " " + url + ")";
    return out;
  }
  if (sink.is_overflow) {
    out.is_transport_error = true;
    out.is_body_too_long = true;
    out.transport_error = "body longer than the " + std::to_string(sink.received) +
                          " bytes expected (" + t.method + " " + url + ")";
    return out;
  }
  out.body = std::move(sink.text);
  if (!out.ok()) {
    out.error_code = xml_element(out.body, "Code");
    out.error_message = xml_element(out.body, "Message");
    if (out.error_code.empty() && out.http_status == 404) out.error_code = "NotFound";
  }
  return out;
}

S3Response S3Client::head_object(S3Connection& conn, const std::string& key) const {
  return perform(conn, Transfer{"HEAD", key, {}, {}, {}});
}

S3Response S3Client::get_object(S3Connection& conn, const std::string& key,
                                std::span<const std::span<uint8_t>> pieces) const {
  return perform(conn, Transfer{"GET", key, {}, {}, pieces});
}

S3Response S3Client::put_object(S3Connection& conn, const std::string& key,
                                std::span<const std::span<const uint8_t>> pieces) const {
  return perform(conn, Transfer{"PUT", key, {}, pieces, {}});
}

S3Response S3Client::delete_object(S3Connection& conn, const std::string& key) const {
  return perform(conn, Transfer{"DELETE", key, {}, {}, {}});
}

S3Response S3Client::list_objects(S3Connection& conn, const std::string& prefix,
                                  int max_keys) const {
  sigv4::Pairs query = {{"list-type", "2"}, {"max-keys", std::to_string(max_keys)}};
  if (!prefix.empty()) query.emplace_back("prefix", prefix);
  return perform(conn, Transfer{"GET", "", std::move(query), {}, {}});
}

S3ConnectionPool::Lease S3ConnectionPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<S3Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(conn));
    }
  }
  return Lease(*this, std::make_unique<S3Connection>());
}

void S3ConnectionPool::release(std::unique_ptr<S3Connection> conn) {
  if (conn == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(conn));
}

}  // namespace strata::offload
