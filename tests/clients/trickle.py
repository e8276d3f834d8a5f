#!/usr/bin/python3
"""Slow clients against one port, and one normal client beside them.

    trickle.py --port P [--conns 1000] [--from 127.0.0.2] [--to 127.0.0.1]
               [--mode head|body] [--interval 0.2] [--duration 20]

Opens --conns connections from the --from address, each trickling one byte
every --interval seconds: of an endless request head (mode head), or of
the body of an EC2 Query POST whose whole head is sent at once (mode
body). Meanwhile a normal client connects from --to's own address (the
default source) and sends complete requests, each on a fresh connection.
Runs until every trickler is closed or --duration passes, then prints one
JSON object:

    tricklers: how many were opened, refused (closed by the server within
               0.5 s of connecting), cut (closed later) and still open;
               cut_after: min/median/max seconds from connect to close
    normal:    requests sent, answered, failed; latency ms min/median/max

It asserts nothing: the bats test decides.
"""
import argparse
import json
import resource
import selectors
import socket
import statistics
import threading
import time


def normal_client(host, port, stop, out):
    req = (b"GET / HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n"
           % (host.encode(), port))
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=10) as s:
                s.sendall(req)
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            ok = data.startswith(b"HTTP/1.1 ")
        except OSError:
            ok = False
        dt = (time.monotonic() - t0) * 1000
        out.append((ok, dt))
        stop.wait(0.05)


def summary(xs):
    if not xs:
        return None
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3),
            "max": round(max(xs), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--from", dest="src", default="127.0.0.2")
    ap.add_argument("--to", default="127.0.0.1")
    ap.add_argument("--mode", choices=("head", "body"), default="head")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--duration", type=float, default=20)
    a = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, a.conns + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    sel = selectors.DefaultSelector()
    opened = {}
    closed = {}
    start = time.monotonic()
    head = (b"GET / HTTP/1.1\r\nHost: %s:%d\r\n" % (a.to.encode(), a.port))
    if a.mode == "body":
        # A Query form the EC2 port reads whole (under its 1 MiB cap).
        head = (b"POST / HTTP/1.1\r\nHost: %s:%d\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: 500000\r\n\r\n" % (a.to.encode(), a.port))
    for i in range(a.conns):
        s = socket.socket()
        s.bind((a.src, 0))
        s.setblocking(False)
        try:
            s.connect((a.to, a.port))
        except BlockingIOError:
            pass
        except OSError:
            closed[i] = 0.0
            s.close()
            continue
        opened[i] = [s, time.monotonic(), 0]
        sel.register(s, selectors.EVENT_READ, i)

    stop = threading.Event()
    results = []
    t = threading.Thread(target=normal_client,
                         args=(a.to, a.port, stop, results), daemon=True)
    t.start()

    def close(i):
        s, t0, _ = opened.pop(i)
        closed[i] = time.monotonic() - t0
        sel.unregister(s)
        s.close()

    body_byte = b"x"
    while opened and time.monotonic() - start < a.duration:
        for key, _ in sel.select(timeout=a.interval):
            i = key.data
            if i not in opened:
                continue
            try:
                if not key.fileobj.recv(65536):
                    close(i)
            except OSError:
                close(i)
        for i in list(opened):
            s, t0, sent = opened[i]
            if a.mode == "body" and sent == 0:
                data = head
            else:
                data = head[sent:sent + 1] if sent < len(head) else (
                    body_byte if a.mode == "body"
                    else b"X-Pad: a\r\n"[(sent - len(head)) % 10:][:1])
            try:
                n = s.send(data)
                opened[i][2] += n
            except BlockingIOError:
                pass
            except OSError:
                close(i)
    stop.set()
    t.join(15)
    still = len(opened)
    for i in list(opened):
        opened[i][0].close()
    times = list(closed.values())
    refused = [x for x in times if x < 0.5]
    cut = [x for x in times if x >= 0.5]
    lat = [dt for ok, dt in results if ok]
    print(json.dumps({
        "tricklers": {"opened": a.conns, "refused": len(refused),
                      "cut": len(cut), "open": still,
                      "cut_after": summary(cut)},
        "normal": {"sent": len(results), "answered": len(lat),
                   "failed": len(results) - len(lat),
                   "latency_ms": summary(lat)},
        "seconds": round(time.monotonic() - start, 3),
    }))


if __name__ == "__main__":
    main()
