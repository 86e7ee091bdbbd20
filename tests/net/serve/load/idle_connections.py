# Issue 33's load test, by hand (not in ctest: it needs ~2 x IDLE file
# descriptors and a minute): IDLE idle keep-alive connections (half of them
# after one request) plus 32 streaming clients (kvscope-cli bench client) on
# one `kvscope-cli serve`; /health latency sampled meanwhile; output tok/s
# against the same server without the idle connections.
#
#   python3 idle_connections.py KVSCOPE_CLI MODEL.gguf [IDLE=10000]
#
# (ulimit -n must allow 2 x IDLE + some.)
import json, socket, subprocess, sys, threading, time
cli, model = sys.argv[1], sys.argv[2]
server_bin = cli
IDLE = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
p = subprocess.Popen([server_bin, "serve", "--model", model, "--port", "0", "--kv-budget-mib", "256", "--log-level", "warn"],
                     stdout=subprocess.PIPE, text=True)
port = int(p.stdout.readline().split("127.0.0.1:")[1].split(" ")[0])
url = f"http://127.0.0.1:{port}"

def bench():
    r = subprocess.run([cli, "--log-level", "warn", "bench", "client", "--url", url, "--requests", "128", "--concurrency", "32",
                        "--lengths", "fixed", "--prompt-len", "64", "--output-len", "48", "--seed", "1", "--json"],
                       capture_output=True, text=True)
    return json.loads(r.stdout)

def health_once():
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(4096)
        if not d: break
        data += d
    s.close()
    return (time.perf_counter() - t0) * 1000, data.startswith(b"HTTP/1.1 200")

def probe(stop, out):
    while not stop.is_set():
        out.append(health_once())
        time.sleep(0.02)

def p99(v):
    v = sorted(v); return v[min(len(v) - 1, int(0.99 * len(v)))]

base = bench()
lat0 = []; st = threading.Event(); t = threading.Thread(target=probe, args=(st, lat0)); t.start()
base2 = bench(); st.set(); t.join()
def rss_kb():
    return int([l for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS")][0].split()[1])
rss_before = rss_kb()
idle = []
t_open = time.time()
for i in range(IDLE):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2 == 0:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    idle.append(s)
for i in range(0, IDLE, 2):
    idle[i].settimeout(30); idle[i].recv(4096)
print(f"{IDLE} idle connections open ({IDLE//2} after a request) in {time.time()-t_open:.1f} s; server RSS {rss_before} kB before, {rss_kb()} kB with them")
lat = []; st = threading.Event(); t = threading.Thread(target=probe, args=(st, lat)); t.start()
loaded = bench(); st.set(); t.join()
alive = 0
for s in idle:
    s.setblocking(False)
    try:
        d = s.recv(1)
        alive += 0 if d == b"" else 1
    except BlockingIOError:
        alive += 1
    except Exception:
        pass
rss = [l for l in open(f"/proc/{p.pid}/status") if l.startswith(("VmRSS", "Threads"))]
print(f"without idle: out tok/s {base['output_tokens_per_second']:.1f} / {base2['output_tokens_per_second']:.1f}, failed {base['failed']}+{base2['failed']}; /health p99 {p99([x for x,_ in lat0]):.1f} ms over {len(lat0)} probes")
print(f"with {IDLE} idle: out tok/s {loaded['output_tokens_per_second']:.1f}, failed {loaded['failed']}, ttft p50 {loaded['ttft_ms']['p50']:.0f} ms; /health p99 {p99([x for x,_ in lat]):.1f} ms, max {max(x for x,_ in lat):.1f} ms over {len(lat)} probes, all 200: {all(ok for _,ok in lat)}; idle still open: {alive}/{IDLE}; server {' '.join(x.split()[0]+x.split()[1] for x in rss)}")
p.terminate(); p.wait()
