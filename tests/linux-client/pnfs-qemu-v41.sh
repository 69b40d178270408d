#!/bin/sh
# Linux client tier, pNFS: the stock Debian kernel (qemu) over NFSv4.1
# writes and reads files of 1 to 256 MiB through flexfiles layouts, on 4
# braid-ds with braid-mds refusing data I/O; where the bytes went is
# checked per data server.  256 MiB at most: qemu runs under TCG here
# (about 20 MiB/s); the 1 GiB files are the uml runs'.  See pnfs-run.sh.
exec bash "$(dirname "$0")/pnfs-run.sh" --backend qemu --vers 4.1 --check data --max-mib 256 "$@"
