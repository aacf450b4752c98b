// Writes the generated seed inputs for fuzz_chunk_header, fuzz_s3_response, fuzz_p2p_protocol,
// fuzz_tokenizer_json, fuzz_safetensors_header and fuzz_gguf (valid encodings from the real
// encoders, plus near-valid variants) into the directory given as argv[1] (normally fuzz/corpus).
// Run by hand when the wire formats change: build/release/fuzz/fuzz_make_seeds fuzz/corpus
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "chunk_fixture.h"
#include "model/loader/test_files.h"
#include "offload/tiers/common/chunk_format.h"
#include "offload/tiers/p2p/p2p_protocol.h"
#include "tokenizer/test_tokenizers.h"

namespace {

namespace offload = strata::offload;
namespace p2p = strata::offload::p2p;

void write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// With a selector byte in front, as fuzz_p2p_protocol reads it.
std::vector<uint8_t> selected(uint8_t selector, std::span<const uint8_t> body) {
  std::vector<uint8_t> out(body.size() + 1);
  out[0] = selector;
  std::copy(body.begin(), body.end(), out.begin() + 1);
  return out;
}

// A valid chunk file (header + payload) for the fuzz fixture's key and format.
std::vector<uint8_t> valid_chunk_file() {
  const offload::ChunkFormat format = strata::fuzz::fuzz_chunk_format();
  std::vector<uint8_t> payload(static_cast<size_t>(format.payload_bytes()));
  for (size_t byte_idx = 0; byte_idx < payload.size(); ++byte_idx) payload[byte_idx] = byte_idx * 7;
  std::vector<uint8_t> file(offload::kHeaderBytes);
  encode_chunk_header(format, strata::fuzz::kFuzzChunkKey, payload,
                      std::span<uint8_t, offload::kHeaderBytes>(file));
  file.insert(file.end(), payload.begin(), payload.end());
  return file;
}

void write_chunk_seeds(const std::filesystem::path& dir) {
  const std::vector<uint8_t> file = valid_chunk_file();
  write_file(dir / "header_only", std::span(file).first(offload::kHeaderBytes));
  write_file(dir / "valid_chunk", file);
  std::vector<uint8_t> corrupt = file;
  corrupt.back() ^= 0x01;
  write_file(dir / "payload_bit_flip", corrupt);
  write_file(dir / "truncated_payload", std::span(file).first(file.size() - 3));
  corrupt = file;
  corrupt[0] ^= 0xff;
  write_file(dir / "bad_magic", corrupt);
}

// fuzz_s3_response inputs: a selector byte (0 GET, 1 HEAD, 2 list, 3 DELETE)
// and the raw HTTP response.
void write_s3_response_seeds(const std::filesystem::path& dir) {
  const std::vector<uint8_t> object = valid_chunk_file();
  const std::string object_text(object.begin(), object.end());
  const auto response = [](char selector, const std::string& status_line,
                           const std::string& headers, const std::string& body) {
    const std::string text = std::string(1, selector) + "HTTP/1.1 " + status_line + "\r\n" +
                             headers + "\r\n" + body;
    return std::vector<uint8_t>(text.begin(), text.end());
  };
  const auto length = [](size_t n) { return "Content-Length: " + std::to_string(n) + "\r\n"; };
  write_file(dir / "get_valid_object",
             response(0, "200 OK", length(object.size()), object_text));
  std::string flipped = object_text;
  flipped.back() ^= 0x01;
  write_file(dir / "get_payload_bit_flip", response(0, "200 OK", length(object.size()), flipped));
  write_file(dir / "get_cut_short",
             response(0, "200 OK", length(object.size()), object_text.substr(0, 50)));
  write_file(dir / "get_too_long",
             response(0, "200 OK", length(object.size() + 8), object_text + "12345678"));
  write_file(dir / "get_short_but_complete",
             response(0, "200 OK", length(40), object_text.substr(0, 40)));
  std::string chunked;
  for (size_t offset = 0; offset < object_text.size(); offset += 37) {
    const std::string piece = object_text.substr(offset, 37);
    char size_line[16];
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", piece.size());
    chunked += size_line + piece + "\r\n";
  }
  chunked += "0\r\n\r\n";
  write_file(dir / "get_chunked", response(0, "200 OK", "Transfer-Encoding: chunked\r\n", chunked));
  const std::string no_such_key =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>The "
      "specified key does not exist.</Message><Key>ns/abc/de/object.kv</Key></Error>";
  write_file(dir / "get_404_no_such_key",
             response(0, "404 Not Found", length(no_such_key.size()), no_such_key));
  const std::string bad_xml = "<Error><Code>InternalError</Code><Message>unterminated";
  write_file(dir / "get_500_unterminated_xml",
             response(0, "500 Internal Server Error", length(bad_xml.size()), bad_xml));
  write_file(dir / "head_ok", response(1, "200 OK", length(object.size()), ""));
  write_file(dir / "head_404", response(1, "404 Not Found", length(0), ""));
  const std::string listing =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>fuzz-bucket</Name>"
      "<Prefix>ns/</Prefix><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>true"
      "</IsTruncated><Contents><Key>ns/abc/de/object.kv</Key><Size>120</Size></Contents>"
      "</ListBucketResult>";
  write_file(dir / "list_ok", response(2, "200 OK", length(listing.size()), listing));
  const std::string denied =
      "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated "
      "does not match the signature you provided.</Message></Error>";
  write_file(dir / "list_403_signature", response(2, "403 Forbidden", length(denied.size()), denied));
  write_file(dir / "delete_204", response(3, "204 No Content", "", ""));
  write_file(dir / "continue_then_close", response(0, "100 Continue", "", ""));
  write_file(dir / "not_http", std::vector<uint8_t>{0, 'S', 'S', 'H', '-', '2', '.', '0', '\n'});
}

void write_p2p_seeds(const std::filesystem::path& dir) {
  std::array<uint8_t, p2p::kFrameHeaderBytes> frame{};
  p2p::encode_frame_header({.type = p2p::MessageType::kDone, .body_bytes = 0}, frame);
  write_file(dir / "frame_done", selected(0, frame));
  p2p::Hello hello;
  for (size_t idx = 0; idx < hello.client_nonce.size(); ++idx) hello.client_nonce[idx] = idx;
  write_file(dir / "hello", selected(1, p2p::encode_hello(hello)));
  write_file(dir / "challenge", selected(2, p2p::encode_challenge(p2p::Challenge{})));
  write_file(dir / "mac", selected(3, p2p::encode_mac(p2p::Mac{})));
  const std::vector<offload::ChunkKey> keys = {{1, 2}, {3, 4}, {5, 6}};
  write_file(dir / "lookup", selected(4, p2p::encode_lookup(keys)));
  // decode_lookup_reply in the target expects body[0] keys: 3 here (u32 LE count 3).
  write_file(dir / "lookup_reply", selected(5, p2p::encode_lookup_reply({true, false, true})));
  write_file(dir / "key", selected(6, p2p::encode_key({7, 8})));
  write_file(dir / "error",
             selected(7, p2p::encode_error({.code = p2p::ErrorCode::kBusy, .message = "busy"})));
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  write_file(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void write_tokenizer_seeds(const std::filesystem::path& dir) {
  namespace tt = strata::tokenizer::testing;
  const std::string byte_level = tt::byte_level_json({{"H", "e"}, {"l", "l"}, {"He", "ll"}}).dump();
  write_text(dir / "byte_level.json", byte_level);
  write_text(dir / "sentencepiece.json",
             tt::sentencepiece_json({"\xe2\x96\x81", "H", "e", "l", "o"}, {{"H", "e"}, {"l", "l"}})
                 .dump());
  write_text(dir / "truncated.json", byte_level.substr(0, byte_level.size() / 2));
  write_text(dir / "unknown_model.json", R"({"model":{"type":"Unigram","vocab":[]}})");
}

void write_model_file_seeds(const std::filesystem::path& corpus) {
  namespace mt = strata::model::testing;
  const std::filesystem::path st_dir = corpus / "fuzz_safetensors_header";
  const mt::TinyShape shape{.vocab = 8,
                            .hidden = 8,
                            .intermediate = 8,
                            .layers = 1,
                            .heads = 2,
                            .kv_heads = 1,
                            .head_dim = 4};
  const std::string tiny = mt::build_safetensors(mt::tiny_hf_tensors("LlamaForCausalLM", shape));
  write_text(st_dir / "tiny_llama.safetensors", tiny);
  write_text(st_dir / "two_tensors.safetensors",
             mt::build_safetensors({{"a", "F16", {2, 2}, mt::f16_bytes({1, 2, 3, 4})},
                                    {"b", "BF16", {1}, mt::bf16_bytes({5})}}));
  write_text(st_dir / "metadata_only.safetensors",
             mt::build_safetensors_raw({{"__metadata__", {{"format", "pt"}}}}, ""));
  write_text(st_dir / "truncated.safetensors", tiny.substr(0, tiny.size() / 3));
  const std::filesystem::path gguf_dir = corpus / "fuzz_gguf";
  const std::string gguf = mt::tiny_gguf("llama", strata::model::kGgmlTypeF32, true, shape).build();
  write_text(gguf_dir / "tiny_llama.gguf", gguf);
  write_text(gguf_dir / "tiny_qwen3_q8.gguf",
             mt::tiny_gguf("qwen3", strata::model::kGgmlTypeQ8_0, false,
                           {.vocab = 32,
                            .hidden = 32,
                            .intermediate = 32,
                            .layers = 1,
                            .heads = 2,
                            .kv_heads = 1,
                            .head_dim = 16})
                 .build());
  write_text(gguf_dir / "truncated.gguf", gguf.substr(0, gguf.size() / 4));
  mt::GgufWriter v2(2);
  v2.add_string("general.architecture", "llama");
  v2.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  write_text(gguf_dir / "metadata_v2.gguf", v2.build());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path corpus(argv[1]);
  write_chunk_seeds(corpus / "fuzz_chunk_header");
  write_s3_response_seeds(corpus / "fuzz_s3_response");
  write_p2p_seeds(corpus / "fuzz_p2p_protocol");
  write_tokenizer_seeds(corpus / "fuzz_tokenizer_json");
  write_model_file_seeds(corpus);
  return 0;
}
