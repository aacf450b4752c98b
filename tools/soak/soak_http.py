"""HTTP on the loopback: one request per connection, raw bytes, SSE streams,
the OpenAI error envelope and answer shapes, Prometheus /metrics text.

Plain functions with no shared state: any thread may call them."""
import http.client
import json
import re
import socket

HTTP_TIMEOUT_S = 120


class HttpResult:
    def __init__(self, status, body, headers=None):
        self.status, self.body, self.headers = status, body, headers or {}

    def json(self):
        return json.loads(self.body)


def http_call(port, method, path, body=None, headers=None, timeout=HTTP_TIMEOUT_S):
    """One request on a fresh connection. Connection errors propagate."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return HttpResult(resp.status, resp.read(), dict(resp.getheaders()))
    finally:
        conn.close()


def raw_exchange(port, data, timeout=10.0):
    """Sends raw bytes, reads until the server closes. Returns (status or None, bytes)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early (413) and closed; read what it sent
        while True:
            try:
                block = sock.recv(65536)
            except ConnectionResetError:
                break
            if not block:
                break
            out += block
    finally:
        sock.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", out)
    return (int(m.group(1)) if m else None), out


def http_body_of(raw):
    """The body of a raw HTTP/1.1 answer (Content-Length framing; enough for errors)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return body


def error_message(body):
    """The OpenAI error envelope's message, or None if the body is not one."""
    try:
        doc = json.loads(body)
        msg = doc["error"]["message"]
        return msg if isinstance(msg, str) and msg.strip() else None
    except (ValueError, KeyError, TypeError):
        return None


def parse_metrics(text):
    """Prometheus text -> {series: value}, model_name/engine labels dropped."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, value = line.rsplit(" ", 1)
        name = re.sub(r'model_name="[^"]*",?', "", name)
        name = re.sub(r'engine="[^"]*",?', "", name).replace(",}", "}").replace("{}", "")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


def answer_text(endpoint, doc):
    choice = doc["choices"][0]
    return choice["text"] if endpoint == "/v1/completions" else choice["message"]["content"]


def delta_text(endpoint, event):
    if not event.get("choices"):
        return ""  # usage-only chunk
    choice = event["choices"][0]
    if endpoint == "/v1/completions":
        return choice.get("text") or ""
    return (choice.get("delta") or {}).get("content") or ""


def read_sse(resp, endpoint):
    """Reads an SSE body to [DONE]. Returns (text of choice 0, events, problem or None)."""
    text, num_events = [], 0
    while True:
        line = resp.readline()
        if not line:
            return "".join(text), num_events, "stream ended without data: [DONE]"
        line = line.rstrip(b"\r\n")
        if not line:
            continue
        if not line.startswith(b"data: "):
            return "".join(text), num_events, f"not an SSE data line: {line[:200]!r}"
        payload = line[6:]
        if payload == b"[DONE]":
            return "".join(text), num_events, None
        try:
            event = json.loads(payload)
        except ValueError:
            return "".join(text), num_events, f"SSE event is not JSON: {payload[:200]!r}"
        if "error" in event:
            return "".join(text), num_events, f"error event in stream: {payload[:300]!r}"
        num_events += 1
        text.append(delta_text(endpoint, event))


def stream_request(soak, endpoint, body):
    """POSTs a streaming request. Returns (text, events, problem); problem None = ok."""
    conn = http.client.HTTPConnection("127.0.0.1", soak.port, timeout=HTTP_TIMEOUT_S)
    try:
        conn.request("POST", endpoint, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return "", 0, f"status {resp.status}: {resp.read()[:300]!r}"
        ctype = resp.getheader("Content-Type", "")
        if "text/event-stream" not in ctype:
            return "", 0, f"content-type {ctype!r}"
        return read_sse(resp, endpoint)
    finally:
        conn.close()
