#!/usr/bin/env python3
"""Hostile-input run against one of our servers, on loopback.

Sends a seeded stream of hostile requests (odd methods, paths, headers, bodies, signatures,
tokens, broken HTTP framing) over raw sockets, so every byte is ours and nothing is normalised by
a client library. Every answer is checked against the server's OpenAPI document: the status must
be one the document lists for that path and method (or the transport-level refusals an HTTP
server may give any request: 400, 413, 414, 431), never a 5xx unless the document lists it and
the body names a documented error code; JSON errors must have the documented shape. Every
`--probe-every` requests, and at the end, a plain health request must succeed: the server is
still serving. For the hub, seeded hostile UDP datagrams go to its ingest port too, and its
counters must account for them.

Prints a count per category and per status, and exits 1 on any violation (each is printed).
Standard library only: it runs wherever python3 does.

    hostile.py --target engine   --base http://127.0.0.1:PORT --doc local-agent/openapi.json
    hostile.py --target hub      --base http://127.0.0.1:PORT --doc local-agent/hub-openapi.json --udp 127.0.0.1:UDPPORT
    hostile.py --target platform --base http://127.0.0.1:PORT --doc lambdas/platform-http/openapi.json --header "Authorization: Bearer KEY"
    hostile.py --target edge     --base http://127.0.0.1:PORT   (the document is GET /openapi.json)
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import random
import re
import socket
import struct
import sys
import time
import urllib.parse
import urllib.request

TRANSPORT_REFUSALS = {400, 408, 413, 414, 431}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT",
           "PROPFIND", "FOO", "get", "G\tET", "GET GET", "X" * 300, "M-SEARCH", "PRI"]


def load_doc(path_or_url: str) -> dict:
    if path_or_url.startswith("http"):
        with urllib.request.urlopen(path_or_url, timeout=30) as r:
            return json.load(r)
    with open(path_or_url, encoding="utf-8") as f:
        return json.load(f)


class Contract:
    """Documented statuses per (path template, method), from an OpenAPI document."""

    def __init__(self, doc: dict, prefix: str = ""):
        self.routes = []
        servers = doc.get("servers") or [{}]
        base = prefix or urllib.parse.urlparse(servers[0].get("url", "")).path.rstrip("/")
        for template, item in doc.get("paths", {}).items():
            methods = {}
            for method, op in item.items():
                if method.upper() in {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}:
                    methods[method.upper()] = set(op.get("responses", {}).keys())
            # A path item may have servers of its own (the platform's hosted pages sit at "/").
            own = item.get("servers")
            path_base = urllib.parse.urlparse(own[0].get("url", "")).path.rstrip("/") if own else base
            pattern = re.escape(path_base + template)
            pattern = re.sub(r"\\\{[^}]*\\\}", r"[^/]+", pattern)
            self.routes.append((re.compile("^" + pattern + "$"), template, methods, path_base))
        self.paths = [b + t for _, t, _, b in self.routes]

    def documented(self, path: str, method: str):
        """(template, statuses) for a path; statuses None when the path is not documented."""
        for regex, template, methods, _ in self.routes:
            if regex.match(path):
                if method in methods:
                    return template, methods[method]
                # Another method on a documented path: 405 and whatever any method documents.
                listed = set().union(*methods.values()) if methods else set()
                return template, listed | {"405"}
        return None, None


class Reply:
    def __init__(self, status: int | None, headers: dict, body: bytes, error: str = ""):
        self.status, self.headers, self.body, self.error = status, headers, body, error


def complete(raw: bytes, head_only: bool) -> bool:
    """Whether `raw` holds a whole response, so a server that keeps the connection open despite
    `Connection: close` (wrangler dev's front does) costs no read timeout."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    status = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if status and (head_only or status.group(1) in (b"204", b"304") or status.group(1).startswith(b"1")):
        return not status.group(1).startswith(b"1")
    fields = {k.strip().lower(): v.strip() for k, _, v in (l.partition(b":") for l in head.split(b"\r\n")[1:])}
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return body.endswith(b"0\r\n\r\n")
    length = fields.get(b"content-length")
    return length is not None and length.isdigit() and len(body) >= int(length)


def remove_dot_segments(path: str) -> str:
    """The path a WHATWG URL parser serves (RFC 3986 §5.2.4, `%2e` counting as a dot)."""
    out = []
    segments = re.sub(r"%2e", ".", path, flags=re.I).split("/")[1:]
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        elif seg == ".":
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


def send_raw(host: str, port: int, data: bytes, timeout: float = 10.0, half_close: bool = False,
             head_only: bool = False) -> Reply:
    """Sends raw bytes on a fresh connection and reads until the server has sent a whole
    response or closes the connection (requests carry `Connection: close`). `half_close` also
    shuts our side, for bytes that are not a complete request, so the server sees the end
    instead of waiting for more. `head_only`: the answer to a HEAD request has no body."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            try:
                s.sendall(data)
            except OSError:
                pass  # the server may answer and close before reading everything
            if half_close:
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            chunks = []
            while True:
                try:
                    b = s.recv(65536)
                except (ConnectionResetError, TimeoutError, socket.timeout):
                    break
                if not b:
                    break
                chunks.append(b)
                if sum(len(c) for c in chunks) > 4 << 20 or complete(b"".join(chunks), head_only):
                    break
    except OSError as e:
        return Reply(None, {}, b"", f"connect: {e}")
    raw = b"".join(chunks)
    if not raw:
        return Reply(None, {}, b"", "closed without a response")
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0])
    if not m:
        return Reply(None, {}, raw, f"not an HTTP response: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    return Reply(int(m.group(1)), headers, body)


def request_bytes(method: str, target: str, host: str, headers: list, body: bytes = b"",
                  length: bool = True) -> bytes:
    lines = [f"{method} {target} HTTP/1.1".encode("latin-1", "replace"), b"Host: " + host.encode()]
    for k, v in headers:
        lines.append(k.encode("latin-1", "replace") + b": " + (v if isinstance(v, bytes) else v.encode("latin-1", "replace")))
    if length and body and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}".encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class Run:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        u = urllib.parse.urlparse(args.base)
        self.host, self.port = u.hostname, u.port
        self.hostport = f"{self.host}:{self.port}"
        doc = load_doc(args.doc or args.base.rstrip("/") + "/openapi.json")
        self.contract = Contract(doc, args.prefix)
        self.counts = collections.Counter()
        self.by_status = collections.Counter()
        self.violations = []
        self.sent = 0
        self.client_n = 0
        self.note = ""

    # -- answers --------------------------------------------------------------------------
    def check(self, category: str, method: str, path: str, reply: Reply, expect=None, note="",
              never_reaches_worker=False):
        self.sent += 1
        self.counts[category] += 1
        status = reply.status
        marker = self.args.worker_marker
        what = f"{category}: {method[:20]!r} {path[:100]!r} {note}"
        if marker and status is not None and marker not in reply.headers:
            # Answered by the runtime in front of the Worker (wrangler dev's proxy, workerd),
            # not by our code: its refusals are not ours to shape. A 5xx there means the Worker
            # threw, unless the request is one a Cloudflare front end refuses before any Worker
            # runs (broken framing, a method that is no HTTP token or that Workers cannot take,
            # an absolute-form target), where only the dev server's answer differs.
            self.by_status[f"runtime-{status}"] += 1
            if status == 500 and b"Cannot reconstruct a Request with a used body" in reply.body:
                # miniflare's own entry worker failing to re-read a request after an earlier
                # hostile connection on the same dev server (replayed alone the same request is
                # answered by the Worker); wrangler dev only, counted and shown, not judged.
                self.by_status["runtime-500-miniflare"] += 1
                print(f"  note: {what}: miniflare entry-worker error (dev server only)")
                return
            if status >= 500 and not never_reaches_worker:
                self.violations.append(f"{what}: {status} from the runtime (the Worker threw?): {reply.body[:200]!r}")
            return
        self.by_status[status if status is not None else "no-response"] += 1
        if status is None:
            # Only a request that is not HTTP at all may be dropped without an answer.
            if category != "framing" and not (marker and never_reaches_worker):
                self.violations.append(f"{what}: {reply.error}")
            return
        if expect is not None:
            if status not in expect:
                self.violations.append(f"{what}: status {status}, expected one of {sorted(expect)}")
            return
        doc_path = urllib.parse.urlsplit(path).path
        if self.args.normalises_dots:
            doc_path = remove_dot_segments(doc_path)
        template, listed = self.contract.documented(doc_path, method)
        for regex, statuses in self.args.readme_routes:
            # Routes a README documents outside the OpenAPI document (MCP, webhook ingress).
            if template is None and re.fullmatch(regex, doc_path):
                template, listed = regex, {str(s) for s in statuses}
                break
        allowed = set(TRANSPORT_REFUSALS) | set(self.args.always_allowed)
        if method == "OPTIONS":
            allowed |= set(self.args.preflight)
        if template is None:
            allowed |= {404, 405} | set(self.args.unknown_allowed)
            if doc_path in self.args.site_paths:
                allowed |= {200, 304}
        else:
            numbers = {int(s) for s in listed if s.isdigit()}
            allowed |= numbers
            if "default" in listed:
                allowed |= set(range(400, 500)) | set(self.args.default_5xx)
        if status == 429 and self.args.fresh_client_ip:
            # Every request is a fresh client: a 429 means the limiter failed (closed).
            self.violations.append(f"{what}: 429 for a first request (the limiter failed?): {reply.body[:200]!r}")
            return
        if status >= 500 and status not in self.args.documented_5xx:
            self.violations.append(f"{what}: server error {status}: {reply.body[:200]!r}")
            return
        if status not in allowed:
            self.violations.append(f"{what}: status {status} is not documented here ({sorted(allowed)})")
            return
        if status >= 400 and self.args.error_shape and method.upper() != "HEAD" and category != "framing":
            if any(doc_path.startswith(p) for p in self.args.html_paths):
                # Hosted pages answer people: their errors are HTML pages, as documented.
                if "text/html" not in reply.headers.get("content-type", "") and reply.body.strip() \
                        and "json" not in reply.headers.get("content-type", ""):
                    self.violations.append(f"{what}: {status} page is neither HTML nor a problem")
                return
            self.check_error_shape(what, reply)

    def check_error_shape(self, what: str, reply: Reply):
        ctype = reply.headers.get("content-type", "")
        if "json" not in ctype:
            # Transport-level refusals by the HTTP library may be bodiless.
            if reply.status not in TRANSPORT_REFUSALS and reply.body.strip():
                self.violations.append(f"{what}: {reply.status} error without a JSON body ({ctype})")
            return
        body = reply.body
        if reply.headers.get("transfer-encoding", "").lower() == "chunked":
            body = dechunk(body)
        try:
            parsed = json.loads(body)
        except ValueError:
            self.violations.append(f"{what}: {reply.status} error body is not JSON: {body[:120]!r}")
            return
        shapes = [shape.split(",") for shape in self.args.error_shape.split("|")]
        if not isinstance(parsed, dict) or not any(all(k in parsed for k in keys) for keys in shapes):
            self.violations.append(f"{what}: {reply.status} error body lacks {' or '.join(map(str, shapes))}: {body[:160]!r}")

    def probe(self):
        """The server still serves a plain request."""
        path = self.args.health
        reply = send_raw(self.host, self.port, request_bytes("GET", path, self.hostport, self.client_headers()))
        ok = reply.status is not None and reply.status < 400
        self.by_status["probe-ok" if ok else "probe-failed"] += 1
        if not ok:
            self.violations.append(f"health probe after {self.sent} requests: {reply.status} {reply.error} {reply.body[:200]!r}")
        return ok

    # -- generators -----------------------------------------------------------------------
    def client_headers(self):
        """Headers every request carries (edge: a fresh client address each time, so the
        one-request-per-second limiter answers what is under test, not 429)."""
        out = list(self.args.header)
        if self.args.fresh_client_ip:
            self.client_n += 1
            n = self.client_n
            out.append(("CF-Connecting-IP", f"198.18.{(n >> 8) & 255}.{n & 255}"))
        return out

    def known_path(self) -> str:
        path = self.rng.choice(self.contract.paths)
        return re.sub(r"\{[^}]*\}", lambda _: self.rng.choice(["x", "1", "cl_" + "A" * 43, "%2e%2e", "a" * 300, "trg_0"]), path)

    def junk(self, n: int) -> bytes:
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def gen_method(self):
        method = self.rng.choice(METHODS)
        path = self.known_path()
        # Not an HTTP token (RFC 9110 §5.6.2): the request line itself is malformed.
        expect = None if re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", method) else {400}
        return "method", method, path, self.client_headers(), b"", expect

    def gen_path(self):
        base = self.known_path()
        variants = [
            base + "/../../etc/passwd", "/" + "/".join(["..", ".."] * 3) + "/etc/passwd",
            base.replace("/", "//"), base + "/", base + ";jsessionid=1", base + "%00",
            base + "?" + "&".join(f"p{i}={i}" for i in range(500)),
            base + "?x=" + "A" * 6000, base + "?%zz=%G1", base + "?hours=-1&hours=1e9",
            "/" + "a" * 9000, "/%2e%2e/%2e%2e/", "/\u00e9\u4e2d".encode("utf-8").decode("latin-1"),
            "/mcp/k/cpk_" + "A" * 43, "/hooks/trg_x/" + "B" * 40, "/connect/cl_" + "C" * 43,
            "*", "http://evil.example/", "/.well-known/../health", base.upper(),
        ]
        path = self.rng.choice(variants)
        return "path", "GET", path, self.client_headers(), b"", None

    def gen_headers(self):
        path = self.known_path()
        h = self.client_headers()
        kind = self.rng.randrange(9)
        self.note = f"(kind {kind})"
        if kind == 0:
            h.append(("X-Big", "A" * self.rng.choice([9000, 17000, 70000])))
        elif kind == 1:
            h.extend((f"X-H{i}", "v") for i in range(self.rng.choice([70, 150, 400])))
        elif kind == 2:
            h.append(("Host", "evil.example"))
        elif kind == 3:
            h.append(("Origin", "https://evil.example"))
        elif kind == 4:
            h.append(("Referer", "https://evil.example/page"))
        elif kind == 5:
            h.append(("X-Bin", self.junk(40).replace(b"\r", b"").replace(b"\n", b"")))
        elif kind == 6:
            h.append(("Content-Length", self.rng.choice(["-1", "abc", "99999999999999999999", "1, 2"])))
        elif kind == 7:
            h.append(("Accept", "*/*;q=" + "9" * 200))
        else:
            h.append(("Cookie", "; ".join(f"c{i}={'x' * 50}" for i in range(50))))
        return "headers", self.rng.choice(["GET", "POST"]), path, h, b"", None

    def gen_body(self):
        path = self.known_path()
        kind = self.rng.randrange(7)
        self.note = f"(kind {kind}, {'body'})"
        h = self.client_headers()
        if kind == 0:
            body = b"[" * 20000 + b"]" * 20000
        elif kind == 1:
            body = self.junk(self.rng.choice([1, 100, 5000]))
        elif kind == 2:
            body = b'{"a":' + b"1e99999" + b', "a": 2, "\xff": "\xc3\x28"}'
        elif kind == 3:
            body = b'{"on": "' + b"x" * 3_000_000 + b'"}'
        elif kind == 4:
            body = json.dumps({"node_id": self.rng.choice([-1, 256, "7", None, 1.5, [1]]),
                               "query": "x" * 5000, "limit": -5}).encode()
        elif kind == 5:
            body = b"\x00" * 64
        else:
            body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + b"A" * 5000 + b'"}}'
        h.append(("Content-Type", self.rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=utf-7"])))
        return "body", self.rng.choice(["POST", "PUT", "PATCH", "GET"]), path, h, body, None

    def gen_token(self):
        path = self.known_path()
        h = self.client_headers()
        tok = self.rng.choice(["", " ", "null", "cpk_" + "A" * 43, "x" * 5000,
                               base64.b64encode(self.junk(24)).decode(), "Bearer", "\u00e9".encode().decode("latin-1")])
        kind = self.rng.randrange(4)
        if kind == 0:
            h.append(("Authorization", "Bearer " + tok))
        elif kind == 1:
            h.append(("Authorization", self.rng.choice(["Basic Og==", "Digest x", "Bearer", "bearer  " + tok])))
        elif kind == 2:
            h.append(("X-Service-Token", tok))
            h.append(("X-Service-Token", tok + "2"))
        else:
            h.append(("X-Service-Token", tok))
        return "token", "GET", path, h, b"", None

    def gen_signature(self):
        path = self.known_path()
        h = self.client_headers()
        now = int(time.time())
        key = base64.urlsafe_b64encode(self.junk(32)).decode().rstrip("=")
        kid = self.rng.choice(["poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U", key, "", "x" * 500])
        jwks = json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": key, "kid": kid}]})
        agent = self.rng.choice([
            '"https://agent.example"', '"https://127.1"', '"https://0177.0.0.1"', '"http://agent.example"',
            '"data:application/http-message-signatures-directory;base64,' + base64.b64encode(jwks.encode()).decode() + '"',
            "garbage(", '"https://[::1]"', '"https://169.254.169.254"', '"https://2130706433"',
        ])
        created = self.rng.choice([now, now - 10 ** 6, now + 10 ** 6, 0, -1])
        sig_input = self.rng.choice([
            f'sig1=("@authority" "signature-agent");created={created};expires={created + 60};keyid="{kid}";tag="web-bot-auth"',
            'sig1=("@authority")', "garbage", 'sig1=("@authority";req);keyid="x"', "sig1=" + "(" * 500,
        ])
        h.extend([("Signature-Agent", agent), ("Signature-Input", sig_input),
                  ("Signature", "sig1=:" + base64.b64encode(self.junk(64)).decode() + ":")])
        return "signature", "GET", path, h, b"", None

    def gen_framing(self):
        path = self.known_path()
        kind = self.rng.randrange(7)
        host = self.hostport
        extra = b"".join(k.encode() + b": " + v.encode() + b"\r\n" for k, v in self.client_headers())
        if kind == 0:
            raw = f"POST {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
        elif kind == 1:
            raw = f"POST {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
        elif kind == 2:
            raw = self.junk(self.rng.choice([10, 200, 4000]))
        elif kind == 3:
            raw = f"GET {path} HTTP/9.9\r\nHost: {host}\r\n\r\n".encode()
        elif kind == 4:
            raw = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Fold: a\r\n  folded\r\n".encode() + extra + b"\r\n"
        elif kind == 5:
            raw = f"GET {path} HTTP/1.1\nHost: {host}\n".encode() + extra.replace(b"\r\n", b"\n") + b"\n"
        else:
            raw = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nHost: other\r\n".encode() + extra + b"\r\n"
        return "framing", None, path, raw, None, {200, 400, 403, 404, 405, 413, 414, 431, 505, 501} if kind in (2, 3) else None

    # -- driver ---------------------------------------------------------------------------
    def run(self):
        gens = [self.gen_method, self.gen_path, self.gen_headers, self.gen_body, self.gen_token,
                self.gen_framing]
        if self.args.signatures:
            gens.append(self.gen_signature)
        start = time.monotonic()
        self.probe()
        for i in range(self.args.count):
            if time.monotonic() - start > self.args.max_seconds:
                self.violations.append(f"time budget of {self.args.max_seconds}s spent after {i} requests")
                break
            self.note = ""
            category, method, path, headers, body, expect = self.rng.choice(gens)()
            if method is None:
                raw = headers
                reply = send_raw(self.host, self.port, raw, timeout=5.0, half_close=True)
                method = raw[:12].decode("latin-1", "replace")
            else:
                raw = request_bytes(method, path, self.hostport, headers, body)
                reply = send_raw(self.host, self.port, raw, head_only=method == "HEAD")
            front = (category == "framing"
                     or (category == "method" and method not in {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
                     or (category == "path" and not path.startswith("/"))
                     # A second Host, or a Content-Length that lies about the (empty) body.
                     or (category == "headers" and re.search(rb"\r\n(Host|Content-Length): ", raw[raw.index(b"\r\n") + 2:]) is not None))
            self.check(category, method, path, reply, expect, note=self.note, never_reaches_worker=front)
            if (i + 1) % self.args.probe_every == 0:
                self.probe()
        self.probe()
        if self.args.udp:
            self.udp_run()
        return start

    def udp_run(self):
        """Hostile datagrams at the hub's UDP port from this (loopback) socket, then the hub's
        counters must have grown by exactly as many handled datagrams."""
        host, port = self.args.udp.rsplit(":", 1)
        before = self.hub_counters()
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        n = self.args.udp_count
        kinds = collections.Counter()
        for i in range(n):
            kind = self.rng.randrange(6)
            if kind == 0:
                d = self.junk(self.rng.randrange(0, 100))
                kinds["junk"] += 1
            elif kind == 1:
                d = struct.pack("<I", 0xC5115E01) + self.junk(self.rng.randrange(0, 80))
                kinds["forged-envelope"] += 1
            elif kind == 2:
                d = struct.pack("<IBBHIIbb2s", 0xC5110001, self.rng.randrange(256), 1, 300, 2437, i, -50, -90, b"\0\0")
                kinds["lying-length"] += 1
            elif kind == 3:
                d = self.junk(5000)
                kinds["oversized"] += 1
            elif kind == 4:
                d = struct.pack("<I", 0xC5110006) + self.junk(56)
                kinds["bad-crc"] += 1
            else:
                d = struct.pack("<I", 0xC5110002) + self.junk(28)
                kinds["vitals"] += 1
            s.sendto(d, (host, int(port)))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            after = self.hub_counters()
            if after - before >= n:
                break
            time.sleep(0.05)
        handled = self.hub_counters() - before
        print(f"udp: {n} hostile datagrams sent, {handled} accounted for by the hub's counters; " +
              ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        if handled < n:
            self.violations.append(f"udp: only {handled} of {n} datagrams accounted for")
        self.probe()

    def hub_counters(self) -> int:
        """Datagrams the hub refused, by every reason a hostile datagram can have. None of them
        may be accepted as a frame, so this must grow by exactly the number sent."""
        with urllib.request.urlopen(self.args.base.rstrip("/") + "/health", timeout=10) as r:
            ingest = json.load(r)["ingest"]
        reasons = ["unknown_sender", "unauthenticated", "replayed", "malformed", "oversized", "ignored"]
        return sum(ingest[k] for k in reasons)


def dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            return body
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2:]
    return out


def header_arg(text: str):
    k, _, v = text.partition(":")
    return (k.strip(), v.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, choices=["engine", "hub", "platform", "edge"])
    p.add_argument("--base", required=True)
    p.add_argument("--doc")
    p.add_argument("--prefix", default="", help="path prefix of the documented paths")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1200)
    p.add_argument("--max-seconds", type=float, default=240)
    p.add_argument("--probe-every", type=int, default=100)
    p.add_argument("--udp")
    p.add_argument("--udp-count", type=int, default=600)
    p.add_argument("--header", type=header_arg, action="append", default=[])
    args = p.parse_args()
    profiles = {
        "engine": dict(health="/health", error_shape="error,detail", always_allowed=[403],
                       unknown_allowed=[403], documented_5xx=[], default_5xx=[], signatures=False,
                       fresh_client_ip=False, worker_marker=None, normalises_dots=False, preflight=[], site_paths=[]),
        "hub": dict(health="/health", error_shape="error,detail", always_allowed=[401, 403],
                    unknown_allowed=[401, 403], documented_5xx=[503], default_5xx=[], signatures=False,
                    fresh_client_ip=False, worker_marker=None, normalises_dots=False, preflight=[], site_paths=[]),
        # Platform errors are RFC 9457 problems, JSON-RPC errors on /mcp, HTML pages on the
        # hosted connect pages. /mcp and /hooks are documented in lambdas/README.md (MCP server,
        # webhook ingress), not in the REST document; their statuses are listed here from it.
        "platform": dict(health="/api/v1/health", error_shape="type,title,status|jsonrpc,error", always_allowed=[401, 429],
                         unknown_allowed=[401, 403, 429], documented_5xx=[], default_5xx=[], signatures=False,
                         fresh_client_ip=False, worker_marker=None, normalises_dots=False, preflight=[], site_paths=[],
                         html_paths=["/connect/", "/oauth/"],
                         readme_routes=[(r"/mcp(/k/[^/]+)?", [200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 429]),
                                        (r"/hooks/.*", [202, 404, 405, 409, 413, 429])]),
        # Edge errors are RFC 9457 problems, except where a protocol fixes its own shape: MCP's
        # JSON-RPC errors, ACP's {type, code, message} and UCP's {code, content}. Preflights
        # answer 204 (CORS).
        "edge": dict(health="/llms.txt", worker_marker="x-request-id",
                     error_shape="type,title,status|jsonrpc,error|type,code|code,content", always_allowed=[429, 403, 406, 415],
                     unknown_allowed=[403, 406, 415, 429], documented_5xx=[], default_5xx=[], signatures=True,
                     fresh_client_ip=True, normalises_dots=True, preflight=[204],
                     # The site's pages (Markdown/HTML) are not API operations, so not in the document.
                     site_paths=["/", "/llms.txt"]),
    }
    for k, v in profiles[args.target].items():
        setattr(args, k, v)
    for k, v in dict(readme_routes=[], html_paths=[]).items():
        if not hasattr(args, k):
            setattr(args, k, v)
    run = Run(args)
    start = run.run()
    took = time.monotonic() - start
    print(f"hostile {args.target}: {run.sent} requests (seed {args.seed}) in {took:.1f}s")
    print("  by category: " + ", ".join(f"{k} {v}" for k, v in sorted(run.counts.items())))
    print("  by status:   " + ", ".join(f"{k} {v}" for k, v in sorted(run.by_status.items(), key=str)))
    if run.violations:
        print(f"  {len(run.violations)} violations:")
        for v in run.violations[:50]:
            print("   - " + v)
        sys.exit(1)
    if run.sent < 1000:
        print(f"error: only {run.sent} requests sent", file=sys.stderr)
        sys.exit(1)
    print("  no violations: every answer documented, no 5xx, the server kept serving")


if __name__ == "__main__":
    main()
