#!/usr/bin/env python3
"""HTTP proxy that injects faults between the object-store tier and an S3 server.

    fault_proxy.py LISTEN_PORT UPSTREAM_PORT      (both on 127.0.0.1; LISTEN_PORT 0 = any)

Prints "listening <port>" once it accepts connections, then reads one command
per line on stdin and answers "ok <mode>" on stdout when the mode is in force:

    mode pass       forward every request unchanged (the start mode)
    mode error500   answer every request with 500 InternalError (S3's XML error body)
    mode error500_once  answer the next request with 500 InternalError, then pass
    mode truncate   forward, but send only half of each non-empty GET response body,
                    then close the connection (the Content-Length still says all of it)
    mode stall      accept requests and never answer until the mode changes

Exits when stdin closes. Request headers (Host included) are forwarded as they
came, so the client's SigV4 signature still verifies upstream. Python stdlib only.
"""
import http.client
import http.server
import socket
import sys
import threading
import time

MODES = ("pass", "error500", "error500_once", "truncate", "stall")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te",
              "trailer", "upgrade"}
ERROR_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
              b"<Message>injected by fault_proxy.py</Message></Error>")


class State:
    lock = threading.Lock()
    mode = "pass"
    upstream_port = 0

    @classmethod
    def get(cls):
        with cls.lock:
            return cls.mode

    @classmethod
    def take(cls):
        """The mode for one request; error500_once turns into pass once taken."""
        with cls.lock:
            mode = cls.mode
            if mode == "error500_once":
                cls.mode = "pass"
                return "error500"
            return mode

    @classmethod
    def set(cls, mode):
        with cls.lock:
            cls.mode = mode


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        pass

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self):
        body = self._read_body()
        mode = State.take()
        if mode == "stall":
            while State.get() == "stall":
                time.sleep(0.02)
            self.close_connection = True
            return
        if mode == "error500":
            self.send_response(500)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(ERROR_BODY)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(ERROR_BODY)
            return
        self._forward(body, truncate=(mode == "truncate"))

    def _forward(self, body, truncate):
        upstream = http.client.HTTPConnection("127.0.0.1", State.upstream_port, timeout=60)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True,
                                skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    upstream.putheader(name, value)
            upstream.endheaders(body if body else None)
            resp = upstream.getresponse()
            data = resp.read()
        except OSError as err:
            msg = f"upstream unreachable: {err}".encode()
            self.send_response(502)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        finally:
            upstream.close()
        self.send_response(resp.status, resp.reason)
        for name, value in resp.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        length = resp.getheader("Content-Length")
        if self.command != "HEAD":
            length = str(len(data))
        if length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        if self.command == "HEAD":
            return
        if truncate and self.command == "GET" and data:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _handle


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    State.upstream_port = int(argv[2])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(argv[1])), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening {server.server_address[1]}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] == "mode" and words[1] in MODES:
            State.set(words[1])
            print(f"ok {words[1]}", flush=True)
        elif words:
            print(f"error unknown command {line.strip()!r}", flush=True)
    State.set("pass")  # release stalled handlers
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
