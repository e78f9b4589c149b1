#!/usr/bin/env python3
"""inet_server: one server of the network tests' test-made internet (tests/network/inet.py).

Python stdlib only: it runs inside a container of the sandbox image (python3 -I), on a Docker
network the test created with --internal, as www.example.test, private.example.test,
pypi.example.test or registry.example.test (the names are the container's network aliases).

It serves, on every name it is reached by:
- HTTP on --http ports (80 and 8080), HTTPS on --https ports (443) with --cert/--key (signed by
  the test's CA, with the names as SANs);
- GET /hello: 200, "hello from HOST (server NAME, port PORT, SCHEME)", HOST the Host header;
- GET /echo: the request's headers as JSON (and its Authorization in X-Echo-Authorization);
- GET /redirect?to=URL: 302 to URL;
- GET /big?bytes=N: N bytes ("x"), N at most 256 MiB;
- a PEP 503 simple index of the wheels in DATA/pypi: GET /simple/ and /simple/<name>/, links
  to /files/<wheel>#sha256=<hex>, and GET /files/<wheel>;
- a minimal npm registry of the tarballs in DATA/npm (<name>-<version>.tgz, each with
  package/package.json): GET /<name> answers the packument (dist.tarball
  SCHEME://HOST/<name>/-/<file>, dist.shasum and dist.integrity of the file), GET
  /<name>/-/<file> the tarball;
- a raw TCP banner and echo on --echo ports (7000): "rbt-echo NAME\\n", then what it receives.

Every HTTP request is logged on stdout as one JSON line {"event": "request", ..., "headers"} (so
that a test can tell that a refused request never reached the server, and what it carried); "READY" is printed once every
port listens.
"""

import argparse
import base64
import hashlib
import html
import http.server
import json
import os
import re
import socket
import socketserver
import ssl
import sys
import tarfile
import threading
import urllib.parse

MAX_BIG = 256 << 20


def normalize(name):
    """PEP 503 name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Catalog:
    """The wheels and npm tarballs this server offers (read once at start)."""

    def __init__(self, data):
        self.wheels = {}  # normalized project -> [(file name, sha256 hex)]
        self.files = {}  # file name -> path (wheels)
        pypi = os.path.join(data, "pypi")
        if os.path.isdir(pypi):
            for fn in sorted(os.listdir(pypi)):
                if not fn.endswith(".whl"):
                    continue
                path = os.path.join(pypi, fn)
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                self.wheels.setdefault(normalize(fn.split("-")[0]), []).append((fn, digest))
                self.files[fn] = path
        self.npm = {}  # package name -> {version: (file name, path, package.json, shasum, integrity)}
        npm = os.path.join(data, "npm")
        if os.path.isdir(npm):
            for fn in sorted(os.listdir(npm)):
                if not fn.endswith(".tgz"):
                    continue
                path = os.path.join(npm, fn)
                with open(path, "rb") as f:
                    blob = f.read()
                with tarfile.open(path, "r:gz") as t:
                    manifest = json.load(t.extractfile("package/package.json"))
                shasum = hashlib.sha1(blob).hexdigest()
                integrity = "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode()
                self.npm.setdefault(manifest["name"], {})[manifest["version"]] = (fn, path, manifest, shasum,
                                                                                    integrity)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rbt-inet/1"

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()

    def finish(self):
        super().finish()
        if isinstance(self.request, ssl.SSLSocket):  # close_notify: clients see a clean end
            try:
                self.request.settimeout(5)
                self.request.unwrap()
            except (OSError, ValueError):
                pass

    def log_message(self, fmt, *args):  # the JSON lines below replace the default log
        pass

    def send_body(self, status, body, ctype="text/plain; charset=utf-8"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.close_connection = True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        srv = self.server
        host = self.headers.get("Host", "")
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        emit(event="request", server=srv.name, port=srv.server_address[1], scheme=srv.scheme, host=host,
             method=self.command, path=self.path, client=self.client_address[0], headers=dict(self.headers.items()))
        cat = srv.catalog
        if path == "/echo":  # the request's headers, in the body (JSON) and in X-Echo-Authorization
            data = json.dumps(dict(self.headers.items())).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
            return None
        if path == "/redirect":  # 302 to the URL in ?to=
            self.send_response(302)
            self.send_header("Location", urllib.parse.parse_qs(url.query).get("to", ["/hello"])[0])
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return None
        if path == "/hello":
            return self.send_body(200, "hello from %s (server %s, port %d, %s)\n"
                                  % (host, srv.name, srv.server_address[1], srv.scheme))
        if path == "/big":
            try:
                n = int(urllib.parse.parse_qs(url.query).get("bytes", ["0"])[0])
            except ValueError:
                return self.send_body(400, "bytes: not a number\n")
            if not 0 <= n <= MAX_BIG:
                return self.send_body(400, "bytes: 0 to %d\n" % MAX_BIG)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"x" * 65536
            left = n
            while left > 0 and self.command != "HEAD":
                self.wfile.write(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))
            self.close_connection = True
            return None
        if path == "/simple/" or path == "/simple":
            links = "".join('<a href="/simple/%s/">%s</a>\n' % (p, p) for p in sorted(cat.wheels))
            return self.send_body(200, "<!DOCTYPE html>\n<html><body>\n%s</body></html>\n" % links,
                                  "text/html; charset=utf-8")
        m = re.fullmatch(r"/simple/([^/]+)/?", path)
        if m:
            files = cat.wheels.get(normalize(m.group(1)))
            if not files:
                return self.send_body(404, "no such project\n")
            links = "".join('<a href="/files/%s#sha256=%s">%s</a>\n' % (html.escape(fn), digest, html.escape(fn))
                            for fn, digest in files)
            return self.send_body(200, "<!DOCTYPE html>\n<html><body>\n%s</body></html>\n" % links,
                                  "text/html; charset=utf-8")
        m = re.fullmatch(r"/files/([^/]+)", path)
        if m and m.group(1) in cat.files:
            with open(cat.files[m.group(1)], "rb") as f:
                return self.send_body(200, f.read(), "application/octet-stream")
        m = re.fullmatch(r"/([^/]+)/-/([^/]+\.tgz)", path)
        if m:
            name = urllib.parse.unquote(m.group(1))
            for fn, fpath, _, _, _ in cat.npm.get(name, {}).values():
                if fn == m.group(2):
                    with open(fpath, "rb") as f:
                        return self.send_body(200, f.read(), "application/octet-stream")
            return self.send_body(404, "no such tarball\n")
        m = re.fullmatch(r"/([^/]+)/?", path)
        if m and urllib.parse.unquote(m.group(1)) in cat.npm:
            name = urllib.parse.unquote(m.group(1))
            versions = {}
            for version, (fn, _, manifest, shasum, integrity) in cat.npm[name].items():
                doc = dict(manifest)
                doc["_id"] = "%s@%s" % (name, version)
                doc["dist"] = {"tarball": "%s://%s/%s/-/%s" % (srv.scheme, host, name, fn), "shasum": shasum,
                               "integrity": integrity}
                versions[version] = doc
            latest = sorted(versions, key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")])[-1]
            packument = {"_id": name, "name": name, "dist-tags": {"latest": latest}, "versions": versions}
            return self.send_body(200, json.dumps(packument), "application/json")
        return self.send_body(404, "not found: %s\n" % path)


class HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, name, scheme, catalog, context=None):
        self.name = name
        self.scheme = scheme
        self.catalog = catalog
        self.context = context
        super().__init__(("0.0.0.0", port), Handler)

    def get_request(self):
        sock, addr = super().get_request()
        sock.settimeout(60)
        if self.context is not None:  # the handshake runs in the request's thread (Handler.setup)
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        emit(event="error", server=self.name, client=client_address[0], error=repr(sys.exc_info()[1]))


def echo_server(port, name):
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", port))
    lst.listen(16)

    def serve(conn, addr):
        emit(event="echo", server=name, port=port, client=addr[0])
        with conn:
            try:
                conn.sendall(("rbt-echo %s\n" % name).encode())
                while True:
                    data = conn.recv(4096)
                    if not data:
                        return
                    conn.sendall(data)
            except OSError:
                return

    def loop():
        while True:
            conn, addr = lst.accept()
            threading.Thread(target=serve, args=(conn, addr), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


_lock = threading.Lock()


def emit(**event):
    with _lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--http", type=int, action="append", default=[])
    ap.add_argument("--https", type=int, action="append", default=[])
    ap.add_argument("--echo", type=int, action="append", default=[])
    ap.add_argument("--cert")
    ap.add_argument("--key")
    args = ap.parse_args()
    catalog = Catalog(args.data)
    servers = [HTTPServer(p, args.name, "http", catalog) for p in args.http]
    if args.https:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        servers += [HTTPServer(p, args.name, "https", catalog, ctx) for p in args.https]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    for p in args.echo:
        echo_server(p, args.name)
    emit(event="ready", server=args.name, wheels=sorted(catalog.files), npm=sorted(catalog.npm))
    print("READY", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
