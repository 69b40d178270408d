#!/usr/bin/env python3
# rpcb-fixed.py -- a private rpcbind for a Linux-client guest (run.sh's nfs3
# check): answers, over TCP on 127.0.0.1, only lookups, from a fixed table,
# so the guest's kernel finds braid-mds's NLM (and NFS, MOUNT) without this
# host's own rpcbind being touched or even running.  The guest reaches it
# through clientvm --fwd ADDR:111=PORT.
#
#   rpcb-fixed.py PORT-FILE LOG PROG:VERS:PORT [PROG:VERS:PORT...]
#
# Binds an ephemeral port and writes it to PORT-FILE, then serves until
# killed.  Every program is mapped for netid tcp only (the guest mounts over
# TCP, and cmdfwd forwards TCP only).  Answers portmapper version 2 GETPORT
# and rpcbind versions 3 and 4 GETADDR (the universal address names the
# address the guest asked, as ADDR.p1.p2) and NULL; anything else is
# PROC_UNAVAIL.  Each lookup is logged to LOG as "getport PROG VERS NETID ->
# PORT", which run.sh reads to show the guest's lockd asked for NLM.
import os
import socket
import struct
import sys
import threading

RPCB_PROG = 100000


def pad4(n):
    return (4 - n % 4) % 4


class Dec:
    def __init__(self, b):
        self.b, self.o = b, 0

    def u32(self):
        v = struct.unpack_from(">I", self.b, self.o)[0]
        self.o += 4
        return v

    def opaque(self):
        n = self.u32()
        if n > 1024:
            raise ValueError("string too long")
        v = self.b[self.o:self.o + n]
        if len(v) != n:
            raise ValueError("short")
        self.o += n + pad4(n)
        return v


def xstr(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b + b"\0" * pad4(len(b))


def reply(xid, body, stat=0):
    # MSG_ACCEPTED, AUTH_NONE verifier, accept_stat
    return struct.pack(">IIIIII", xid, 1, 0, 0, 0, stat) + body


def handle(msg, table, log, lock):
    d = Dec(msg)
    xid, mtype, rpcvers, prog, vers, proc = (d.u32() for _ in range(6))
    if mtype != 0 or rpcvers != 2:
        return None
    d.u32(), d.opaque()  # credential
    d.u32(), d.opaque()  # verifier
    if prog != RPCB_PROG:
        return reply(xid, b"", 1)  # PROG_UNAVAIL
    if vers not in (2, 3, 4):
        return reply(xid, struct.pack(">II", 2, 4), 2)  # PROG_MISMATCH 2..4
    if proc == 0:
        return reply(xid, b"")
    if proc != 3:
        return reply(xid, b"", 3)  # PROC_UNAVAIL
    if vers == 2:
        p, v, prot, _ = (d.u32() for _ in range(4))
        netid = "tcp" if prot == 6 else "udp" if prot == 17 else str(prot)
        port = table.get((p, v)) if prot == 6 else None
        with lock:
            log.write("getport %d %d %s -> %d\n" % (p, v, netid, port or 0))
            log.flush()
        return reply(xid, struct.pack(">I", port or 0))
    p, v = d.u32(), d.u32()
    netid = d.opaque().decode(errors="replace")
    addr = d.opaque().decode(errors="replace")
    d.opaque()  # owner
    port = table.get((p, v)) if netid == "tcp" else None
    with lock:
        log.write("getport %d %d %s -> %d\n" % (p, v, netid, port or 0))
        log.flush()
    if not port:
        return reply(xid, xstr(""))
    # the address the caller asked about, as it named it (r_addr), else ours
    host = ".".join(addr.split(".")[:4]) if addr.count(".") == 5 else "127.0.0.1"
    return reply(xid, xstr("%s.%d.%d" % (host, port >> 8, port & 255)))


def serve(conn, table, log, lock):
    conn.settimeout(300)
    buf = b""
    try:
        while True:
            frag = b""
            while True:
                while len(buf) < 4:
                    c = conn.recv(65536)
                    if not c:
                        return
                    buf += c
                mark = struct.unpack(">I", buf[:4])[0]
                n = mark & 0x7FFFFFFF
                if n > 65536:
                    return
                while len(buf) < 4 + n:
                    c = conn.recv(65536)
                    if not c:
                        return
                    buf += c
                frag += buf[4:4 + n]
                buf = buf[4 + n:]
                if mark & 0x80000000:
                    break
            try:
                r = handle(frag, table, log, lock)
            except (ValueError, struct.error):
                return
            if r is not None:
                conn.sendall(struct.pack(">I", 0x80000000 | len(r)) + r)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: rpcb-fixed.py PORT-FILE LOG PROG:VERS:PORT...")
    table = {}
    for m in sys.argv[3:]:
        p, v, port = (int(x) for x in m.split(":"))
        table[(p, v)] = port
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    log = open(sys.argv[2], "a")
    lock = threading.Lock()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, table, log, lock), daemon=True).start()


if __name__ == "__main__":
    main()
