#!/bin/sh
# Linux client tier, pNFS: a file with 2 mirrors reads back whole while the
# data server serving the read is SIGKILLed (NFSv4.1, user-mode-linux).
# UML only: the failover is the same flexfiles code in both Debian 6.1
# kernels, and under TCG the mirrored write alone would take minutes.
# See pnfs-run.sh.
exec bash "$(dirname "$0")/pnfs-run.sh" --backend uml --vers 4.1 --check mirror "$@"
