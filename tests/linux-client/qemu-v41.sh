#!/bin/sh
# Linux client tier: one guest, the stock Debian kernel in qemu (TCG;
# Debian's amd64 kernel, for fidelity) over NFSv4.1, against braid-mds
# refusing data I/O with 4 braid-ds, runs in turn:
#   posix  the POSIX workload (posix.sh), its data through layouts;
#   data   files of 1 to 64 MiB written and read through flexfiles layouts;
#          where the bytes went is checked per data server.
# See run.sh.
exec bash "$(dirname "$0")/run.sh" --backend qemu --vers 4.1 --checks posix,data "$@"
