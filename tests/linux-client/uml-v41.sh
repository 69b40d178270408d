#!/bin/sh
# Linux client tier: one guest, the stock Debian kernel as user-mode-linux
# (Debian's UML kernel, for speed) over NFSv4.1, against braid-mds refusing
# data I/O with 4 braid-ds, runs in turn:
#   posix   the POSIX workload (posix.sh), its data through layouts;
#   nfs3    the POSIX workload over NFSv3, its locks through the guest's
#           lockd and braid-mds's NLM, and NFSv3 and NFSv4.1 locks on one
#           file conflicting;
#   nfs40   the POSIX workload over NFSv4.0;
#   deleg   an NFSv4.0 mount's open for write recalls an NFSv4.1 mount's
#           read delegation (two client IDs in one guest);
#   data    files of 1 to 64 MiB written and read through flexfiles
#           layouts; where the bytes went is checked per data server;
#   mirror  a file with 2 mirrors reads back whole while the data server
#           serving the read is SIGKILLed.  UML only: the failover is the
#           same flexfiles code in both Debian 6.1 kernels, and under TCG
#           the mirrored write alone would take minutes.
# See run.sh.
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.1 --checks posix,nfs3,nfs40,deleg,data,mirror "$@"
