#!/bin/sh
# Linux client tier: the POSIX workload (posix.sh) through a stock Linux
# NFSv4.2 client in user-mode-linux, Debian's UML kernel,
# against braid-mds with two braid-ds from $top_builddir.  See posix-run.sh.
exec bash "$(dirname "$0")/posix-run.sh" --backend uml --vers 4.2 --server braid "$@"
