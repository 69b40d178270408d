#!/bin/sh
# Linux client tier: the POSIX workload (posix.sh) through a stock Linux
# NFSv4.1 client in user-mode-linux, Debian's UML kernel,
# against braid-mds with two braid-ds from $top_builddir.  See posix-run.sh.
exec bash "$(dirname "$0")/posix-run.sh" --backend uml --vers 4.1 --server braid "$@"
