#!/usr/bin/env python3
"""Compares offload::sigv4 with botocore's S3 SigV4 signer on a few requests.

    sigv4_botocore_test.py path/to/sigv4_sign_tool

Each case is signed by botocore (Debian python3-botocore; S3SigV4Auth, the
signer boto3's S3 client uses) at a fixed time and by our tool; the
Authorization headers must name the same credential scope, signed headers
and signature. Paths are percent-encoded for botocore
with urllib's quote (an encoder independent of ours) and query parameters go
through botocore's own encoder. Exits 77 (skipped) without botocore.
"""
import datetime
import json
import subprocess
import sys
import urllib.parse
from unittest import mock

try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:
    print("python3-botocore is not installed; skipping")
    sys.exit(77)

ENDPOINT = "http://127.0.0.1:9000"
HOST = "127.0.0.1:9000"
BODY = bytes((i * 7 + 3) % 256 for i in range(3000))

CASES = [
    dict(name="GET object", method="GET", path="/kv/ns/0123abcd.kv"),
    dict(name="PUT with a binary body, special characters in the key", method="PUT",
         path="/kv/team a/kv+cache=1 (x)*!'/\u00fcn\u00efcode~._-.kv", body=BODY),
    dict(name="HEAD", method="HEAD", path="/kv/prefix/ns/ffee.kv"),
    dict(name="ListObjectsV2 query", method="GET", path="/kv",
         query=[("list-type", "2"), ("max-keys", "1"), ("prefix", "team a/ns+1/")]),
    dict(name="DELETE with a session token, another region and date", method="DELETE",
         path="/bucket.with.dots/a/b.kv", token="FQoGZXIvYXdzEJr//////////wEaDM+/=",
         region="eu-west-3", when=datetime.datetime(2026, 11, 30, 23, 59, 59)),
    dict(name="GET with a range and a header needing whitespace folding", method="GET",
         path="/kv/x.kv", headers=[("Range", "bytes=0-95"), ("X-Amz-Meta-Note", "  a   b  ")]),
    dict(name="PUT with an empty body", method="PUT", path="/kv/empty", body=b""),
]

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def components(authorization):
    """Algorithm and the Credential / SignedHeaders / Signature fields (botocore
    separates them with ", ", we with ","; S3 accepts both)."""
    algorithm, _, rest = authorization.partition(" ")
    return [algorithm] + [part.strip() for part in rest.split(",")]


def botocore_authorization(case):
    when = case.get("when", datetime.datetime(2013, 5, 24, 0, 0, 0))
    url = ENDPOINT + urllib.parse.quote(case["path"], safe="/~")
    params = dict(case.get("query", []))
    headers = dict(case.get("headers", []))
    req = AWSRequest(method=case["method"], url=url, headers=headers,
                     data=case.get("body", b""), params=params)
    creds = Credentials(ACCESS_KEY, SECRET_KEY, case.get("token"))
    auth = S3SigV4Auth(creds, "s3", case.get("region", "us-east-1"))
    with mock.patch("botocore.auth.datetime") as dt:
        dt.datetime.utcnow.return_value = when
        auth.add_auth(req)
    authorization = req.headers["Authorization"]
    del req.headers["Authorization"]
    return authorization, auth.canonical_request(req)


def tool_input(case):
    when = case.get("when", datetime.datetime(2013, 5, 24, 0, 0, 0))
    return {
        "method": case["method"],
        "path": case["path"],
        "query": case.get("query", []),
        "headers": [["host", HOST]] + [list(h) for h in case.get("headers", [])],
        "body_hex": case.get("body", b"").hex(),
        "access_key": ACCESS_KEY,
        "secret_key": SECRET_KEY,
        "session_token": case.get("token") or "",
        "region": case.get("region", "us-east-1"),
        "amz_date": when.strftime("%Y%m%dT%H%M%SZ"),
    }


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    lines = "".join(json.dumps(tool_input(c)) + "\n" for c in CASES)
    out = subprocess.run([argv[1]], input=lines, capture_output=True, text=True, check=True)
    ours = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(ours) == len(CASES), out.stdout
    failures = 0
    for case, mine in zip(CASES, ours):
        theirs, their_canonical = botocore_authorization(case)
        if components(mine["authorization"]) == components(theirs):
            print(f"ok   {case['name']}")
            continue
        failures += 1
        print(f"FAIL {case['name']}\n  botocore: {theirs}\n  strata:   {mine['authorization']}")
        print(f"  botocore canonical request:\n{their_canonical}\n"
              f"  strata canonical request:\n{mine['canonical_request']}")
    print(f"{len(CASES) - failures} of {len(CASES)} signatures equal botocore's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
