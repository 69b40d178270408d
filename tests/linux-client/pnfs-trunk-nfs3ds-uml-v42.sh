#!/bin/sh
# Linux client tier, pNFS: NFSv3 data servers (braid-ds nfs41 = no), NFSv4.2
# to the MDS, nconnect=2,max_connect=4 and two guest NICs: several
# transports per data server (nconnect).  Linux 6.1 does not add a v3 data
# server's other addresses (max_connect is 1 for its RPC client): printed,
# not required.  See run.sh.
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.2 --checks trunk --ds-vers 3 "$@"
