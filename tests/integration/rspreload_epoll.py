#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
"""Debian's python3 (epoll_create1, epoll_ctl, epoll_wait, accept4 and
sendfile64 from the interpreter itself) under `madcm run --rsocket`, for
tests/integration/rspreload_epoll.sh.

  server HOST PORT N: an epoll (selectors.EpollSelector) echo server with
    a pipe in the same set, written once the first connection is in; ends
    after N connections closed, printing what it echoed.
  client HOST PORT N FILE: N connections sending at once, each FILE with
    os.sendfile, then shuts down its write side and reads the echo back
    and checks it byte for byte.  FILE fits in the rsockets' buffers: the
    echo waits in them until the client reads (one thread per socket).
"""
import os
import selectors
import socket
import sys
import threading


def server(host, port, n):
    sel = selectors.EpollSelector()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(8)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ, "listen")
    r, w = os.pipe()
    sel.register(r, selectors.EVENT_READ, "pipe")
    print("listening", flush=True)
    done = accepted = total = pipe_seen = 0
    while done < n:
        for key, _ in sel.select():
            if key.data == "listen":
                c, _ = ls.accept()
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ, "conn")
                accepted += 1
                if accepted == 1:
                    os.write(w, b"p")
            elif key.data == "pipe":
                os.read(r, 1)
                pipe_seen += 1
            else:
                c = key.fileobj
                try:
                    d = c.recv(65536)
                except BlockingIOError:
                    continue
                if not d:
                    sel.unregister(c)
                    c.close()
                    done += 1
                    continue
                c.setblocking(True)
                c.sendall(d)
                c.setblocking(False)
                total += len(d)
    sel.close()
    ls.close()
    print("server done: %d connections, %d bytes echoed, pipe %d" % (n, total, pipe_seen),
          flush=True)
    return 0 if pipe_seen == 1 else 1


def client(host, port, n, path):
    want = open(path, "rb").read()
    errors = []

    def one(i, s):
        got = bytearray()
        with open(path, "rb") as f:
            off = 0
            while off < len(want):
                off += os.sendfile(s.fileno(), f.fileno(), off, len(want) - off)
        s.shutdown(socket.SHUT_WR)
        while True:
            d = s.recv(65536)
            if not d:
                break
            got.extend(d)
        s.close()
        if bytes(got) != want:
            errors.append("connection %d: %d bytes back of %d" % (i, len(got), len(want)))

    # Connected one after the other: the threads then send at once.
    socks = [socket.create_connection((host, port)) for _ in range(n)]
    ts = [threading.Thread(target=one, args=(i, socks[i])) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("client done: %d connections, %d bytes each" % (n, len(want)), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    sys.exit(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
