#!/usr/bin/env python3
"""The raw link's floor for the WAN rows: bytes over a plain TCP
connection through the same emulator (netproxy), with no SSH and no
ferry in the way.

  linksink.py serve PORTFILE   listen on 127.0.0.1; each connection is
                               read to its end, then answered "ok"
  linksink.py send PORT        send stdin to 127.0.0.1:PORT, then wait
                               for the answer, so the time counts the
                               last byte's arrival
"""
import os
import socket
import sys
import threading

CHUNK = 1 << 20


def drain(conn):
    with conn:
        while conn.recv(CHUNK):
            pass
        conn.sendall(b"ok")


def serve(port_file):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(tmp, port_file)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def send(port):
    conn = socket.create_connection(("127.0.0.1", port))
    src = sys.stdin.buffer
    while True:
        buf = src.read(CHUNK)
        if not buf:
            break
        conn.sendall(buf)
    conn.shutdown(socket.SHUT_WR)
    if conn.recv(16) != b"ok":
        sys.exit("linksink: no answer from the sink")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("serve", "send"):
        sys.exit(__doc__)
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        send(int(sys.argv[2]))
