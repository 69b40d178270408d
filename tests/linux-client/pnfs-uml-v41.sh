#!/bin/sh
# Linux client tier, pNFS: the stock Debian kernel (user-mode-linux) over
# NFSv4.1 writes and reads files of 1 to 64 MiB through flexfiles layouts,
# on 4 braid-ds with braid-mds refusing data I/O; where the bytes went is
# checked per data server.  See pnfs-run.sh (and why 64 MiB is enough).
exec bash "$(dirname "$0")/pnfs-run.sh" --backend uml --vers 4.1 --check data "$@"
