// Fuzz target: what an object store (or anything pretending to be one at the
// configured endpoint) sends back to the object-store tier. The input's first
// byte picks the request (GET of a chunk object, HEAD, ListObjectsV2, DELETE);
// the rest is the raw HTTP response, served by a loopback server in this
// process to the real S3Client over libcurl. Exercised: status/header
// handling, the body sink that fills the tier's header + payload buffers
// (short, long, chunked bodies), the S3 error XML (<Code>, <Message>),
// describe(), and for a complete GET the chunk header and payload checks the
// tier runs before trusting the bytes.
//
// Threads: one server thread answers connections one at a time with the
// current input; libFuzzer's thread is the client. The server closes every
// connection after answering, so no request waits on a timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "chunk_fixture.h"
#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/obj/s3_client.h"

namespace {

namespace offload = strata::offload;

// Answers each connection with `response` (whatever the request was).
class LoopbackResponder {
 public:
  LoopbackResponder() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::perror("fuzz_s3_response: loopback listener");
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    std::thread([this] { serve(); }).detach();  // lives as long as the process
  }

  int port() const { return port_; }

  void set_response(std::span<const uint8_t> bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    response_.assign(bytes.begin(), bytes.end());
  }

 private:
  void serve() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      read_request_head(fd);
      std::vector<uint8_t> response;
      {
        std::lock_guard<std::mutex> lock(mu_);
        response = response_;
      }
      size_t sent = 0;
      while (sent < response.size()) {
        const ssize_t n = send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      shutdown(fd, SHUT_WR);
      close(fd);
    }
  }

  // Reads up to the blank line that ends the request head (the client sends
  // no bodies here), so the response never races the request.
  static void read_request_head(int fd) {
    std::string head;
    char buf[1024];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 64 * 1024) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::vector<uint8_t> response_;
};

offload::S3Client make_client(int port) {
  offload::S3ClientConfig config;
  config.endpoint = {"http", "127.0.0.1:" + std::to_string(port)};
  config.bucket = "fuzz-bucket";
  config.credentials = {"fuzz-access-key", "fuzz-secret-key", ""};
  config.connect_timeout_ms = 2000;
  config.request_timeout_ms = 5000;  // a safety net; the responder always closes
  return offload::S3Client(std::move(config));
}

// The tier's own acceptance of a GET: exact length, then header and payload.
void check_chunk_object(const offload::S3Response& r, std::span<const uint8_t> header,
                        std::span<const uint8_t> payload) {
  static const offload::ChunkFormat format = strata::fuzz::fuzz_chunk_format();
  if (!r.ok() || r.body_bytes != static_cast<int64_t>(header.size() + payload.size())) return;
  auto decoded = offload::decode_chunk_header(format, strata::fuzz::kFuzzChunkKey, header);
  if (decoded.ok()) (void)offload::verify_chunk_payload(decoded.value(), payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static LoopbackResponder responder;
  static const offload::S3Client client = make_client(responder.port());
  static offload::S3Connection conn;
  static const int64_t payload_bytes = strata::fuzz::fuzz_chunk_format().payload_bytes();
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  responder.set_response(std::span<const uint8_t>(data + 1, size - 1));

  const std::string key = "ns/abc/de/object.kv";
  offload::S3Response r;
  switch (selector % 4) {
    case 0: {
      std::array<uint8_t, offload::kHeaderBytes> header{};
      std::vector<uint8_t> payload(static_cast<size_t>(payload_bytes));
      const std::span<uint8_t> pieces[2] = {header, payload};
      r = client.get_object(conn, key, pieces);
      check_chunk_object(r, header, payload);
      break;
    }
    case 1:
      r = client.head_object(conn, key);
      break;
    case 2:
      r = client.list_objects(conn, "ns/", 1);
      break;
    default:
      r = client.delete_object(conn, key);
      break;
  }
  (void)r.describe();
  return 0;
}
