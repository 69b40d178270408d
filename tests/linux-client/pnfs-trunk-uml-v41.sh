#!/bin/sh
# Linux client tier, pNFS: NFSv4.1 data servers advertised on two guest
# NICs, mounted with nconnect=2,max_connect=4: the client session-trunks
# each data server over both (user-mode-linux; UML only, as for the mirror
# check).  See run.sh.
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.1 --checks trunk --ds-vers 4.1 "$@"
