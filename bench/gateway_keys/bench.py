# What keys, a budget and an RPM limit add per request: N sequential non-streamed requests over
# one keep-alive connection to a `switchyard serve` whose upstream is a local mock that answers
# at once; prints p50/p99 in ms. Usage: bench.py ADDR KEY|- N
import http.client, json, sys, time
addr, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = addr.split(":")
c = http.client.HTTPConnection(host, int(port))
import socket
c.connect(); c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
body = json.dumps({"model": "sonnet", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]})
h = {"content-type": "application/json"}
if key != "-":
    h["authorization"] = "Bearer " + key
ts = []
for i in range(n + 20):
    t = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body, h)
    r = c.getresponse(); r.read()
    assert r.status == 200, (r.status)
    if i >= 20:
        ts.append((time.perf_counter() - t) * 1000)
ts.sort()
print(f"p50 {ts[len(ts)//2]:.2f} ms  p99 {ts[int(len(ts)*0.99)]:.2f} ms  (n={n})")
