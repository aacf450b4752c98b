"""The malformed-request catalogue: bad JSON, wrong types, every documented
limit, oversized bodies and HTTP framing errors, as raw request bytes.

Pure functions; MalformedClient (soak_clients.py) sends the entries."""
import json

from soak_probes import long_text


def _req(path, body, method="POST", extra_headers=""):
    """Raw bytes of one request with a correct Content-Length."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\n{extra_headers}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


C, CHAT = "/v1/completions", "/v1/chat/completions"
U64_MAX = "18446744073709551615"


def _ok_chat(**kw):
    return {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **kw}


def malformed_catalogue(max_body_bytes, max_model_len):
    """[(name, raw request bytes, is_framing)]: every one must get a 4xx with a message."""
    cat = [
        ("invalid_json", _req(C, '{"prompt": "hi",'), False),
        ("truncated_json", _req(C, '{"prompt": "hel'), False),
        ("not_an_object", _req(C, "[1, 2, 3]"), False),
        ("empty_body", _req(C, ""), False),
        ("nan_literal", _req(C, '{"prompt": "hi", "temperature": NaN}'), False),
        ("number_overflow", _req(C, '{"prompt": "hi", "temperature": 1e400}'), False),
        ("deep_nesting", _req(C, '{"prompt": ' + "[" * 50000 + "]" * 50000 + "}"), False),
        ("non_utf8", _req(C, b'{"prompt": "\xff\xfe\xfd"}'), False),
        ("utf8_bom", _req(C, b'\xef\xbb\xbf{"prompt": "hi"}'), False),
        ("prompt_missing", _req(C, {"max_tokens": 4}), False),
        ("prompt_wrong_type", _req(C, {"prompt": 123}), False),
        ("prompt_empty_list", _req(C, {"prompt": []}), False),
        ("prompt_token_oov", _req(C, {"prompt": [1, 99999]}), False),
        ("prompt_token_negative", _req(C, {"prompt": [-1, 5]}), False),
        ("prompt_too_long", _req(C, {"prompt": long_text(7, max_model_len * 2)}), False),
        ("prompt_ids_too_long", _req(C, {"prompt": [5] * (max_model_len + 10)}), False),
        ("max_tokens_string", _req(C, {"prompt": "hi", "max_tokens": "ten"}), False),
        ("max_tokens_float", _req(C, '{"prompt": "hi", "max_tokens": 2.5}'), False),
        ("max_tokens_negative", _req(C, {"prompt": "hi", "max_tokens": -1}), False),
        ("max_tokens_zero", _req(C, {"prompt": "hi", "max_tokens": 0}), False),
        ("max_tokens_over_context", _req(C, {"prompt": "hi", "max_tokens": 10 ** 9}), False),
        ("max_tokens_u64", _req(C, '{"prompt": "hi", "max_tokens": ' + U64_MAX + "}"), False),
        ("n_u64", _req(C, '{"prompt": "hi", "n": ' + U64_MAX + "}"), False),
        ("n_1000", _req(C, {"prompt": "hi", "n": 1000}), False),
        ("n_zero", _req(C, {"prompt": "hi", "n": 0}), False),
        ("temperature_string", _req(C, {"prompt": "hi", "temperature": "hot"}), False),
        ("temperature_negative", _req(C, {"prompt": "hi", "temperature": -1}), False),
        ("top_p_zero", _req(C, {"prompt": "hi", "top_p": 0}), False),
        ("top_k_negative", _req(C, {"prompt": "hi", "top_k": -5}), False),
        ("logprobs_100", _req(C, {"prompt": "hi", "logprobs": 100}), False),
        ("prompt_logprobs_100", _req(C, {"prompt": "hi", "prompt_logprobs": 100}), False),
        ("stop_65_strings", _req(C, {"prompt": "hi", "stop": [f"s{i}" for i in range(65)]}),
         False),
        ("stop_string_4097", _req(C, {"prompt": "hi", "stop": ["x" * 4097]}), False),
        ("stop_wrong_type", _req(C, {"prompt": "hi", "stop": 5}), False),
        ("stop_token_ids_1025", _req(C, {"prompt": "hi", "stop_token_ids": [3] * 1025}), False),
        ("stop_token_id_oov", _req(C, {"prompt": "hi", "stop_token_ids": [999999]}), False),
        ("logit_bias_4097", _req(C, {"prompt": "hi",
                                     "logit_bias": {str(i): 1 for i in range(4097)}}), False),
        ("logit_bias_bad_key", _req(C, {"prompt": "hi", "logit_bias": {"abc": 1}}), False),
        ("logit_bias_oov", _req(C, {"prompt": "hi", "logit_bias": {"999999": 1}}), False),
        ("min_tokens_over_max", _req(C, {"prompt": "hi", "max_tokens": 2, "min_tokens": 5}),
         False),
        ("stream_options_no_stream", _req(C, {"prompt": "hi",
                                              "stream_options": {"include_usage": True}}), False),
        ("prompt_logprobs_stream", _req(C, {"prompt": "hi", "stream": True,
                                            "prompt_logprobs": 1}), False),
        ("best_of_2", _req(C, {"prompt": "hi", "best_of": 2}), False),
        ("beam_search", _req(C, {"prompt": "hi", "use_beam_search": True}), False),
        ("response_format_schema", _req(C, {"prompt": "hi",
                                            "response_format": {"type": "json_schema"}}), False),
        ("suffix", _req(C, {"prompt": "hi", "suffix": "x"}), False),
        ("remote_port_70000", _req(C, {"prompt": "hi",
                                       "kv_transfer_params": {"remote_port": 70000}}), False),
        ("unknown_model", _req(C, {"prompt": "hi", "model": "no-such-model"}), False),
        ("chat_messages_missing", _req(CHAT, {"max_tokens": 4}), False),
        ("chat_messages_not_list", _req(CHAT, {"messages": "hi"}), False),
        ("chat_role_missing", _req(CHAT, {"messages": [{"content": "hi"}]}), False),
        ("chat_role_wrong_type", _req(CHAT, {"messages": [{"role": 5, "content": "hi"}]}), False),
        ("chat_image_part", _req(CHAT, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}), False),
        ("chat_top_logprobs_100", _req(CHAT, _ok_chat(logprobs=True, top_logprobs=100)), False),
        ("chat_top_logprobs_no_logprobs", _req(CHAT, _ok_chat(top_logprobs=2)), False),
        ("chat_both_generation_flags", _req(CHAT, _ok_chat(continue_final_message=True)), False),
        ("chat_tools_not_list", _req(CHAT, _ok_chat(tools="x")), False),
        ("chat_max_tokens_u64", _req(CHAT, '{"messages": [{"role": "user", "content": "hi"}], '
                                     '"max_tokens": ' + U64_MAX + "}"), False),
        ("unknown_path", _req("/v1/no-such-endpoint", {"prompt": "hi"}), False),
        ("non_utf8_path",
         b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", False),
        ("wrong_method", _req(C, "", method="GET"), False),
        ("oversized_declared",
         (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          f"Content-Length: {max_body_bytes + 1}\r\n\r\n").encode(), False),
        ("oversized_body", _req(C, {"prompt": "x" * (max_body_bytes + 16)}), False),
        ("oversized_chunked", _chunked(C, b'{"prompt": "' + b"y" * (max_body_bytes + 16) + b'"}'),
         False),
        # HTTP framing: the request cannot be parsed as HTTP at all.
        ("bad_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Length: abc\r\n\r\n{}").encode(), True),
        ("negative_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     "Content-Length: -5\r\n\r\n{}").encode(), True),
        ("conflicting_content_length", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                        "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
         .encode(), True),
        ("bad_chunk_size", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n").encode(),
         True),
        ("garbage_request_line", b"\x00\x01\x02 NOT HTTP AT ALL\r\n\r\n", True),
        ("bad_http_version", f"POST {C} HTTP/9.9\r\nHost: x\r\n\r\n".encode(), True),
        ("header_over_64k", (f"POST {C} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "a" * 70000 +
                             "\r\nContent-Length: 2\r\n\r\n{}").encode(), True),
    ]
    return cat


def _chunked(path, body):
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    parts = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
