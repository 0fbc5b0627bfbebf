# A local Anthropic upstream answering every request at once with the anthropic_text fixture.
import http.server, sys
raw = open(sys.argv[2], "rb").read()
head, body = raw.split(b"\r\n\r\n", 1) if b"\r\n\r\n" in raw else raw.split(b"\n\n", 1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16
    def setup(self):
        super().setup()
        import socket
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers(); self.wfile.write(body); self.wfile.flush()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
