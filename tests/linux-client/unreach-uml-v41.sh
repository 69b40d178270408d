#!/bin/sh
# Linux client tier: a data server the client cannot reach (issue 15): the
# stock NFSv4.1 client, 3 data servers, one advertising a port nothing
# listens on; data_io = proxy.  Its I/O must complete (through other
# mirrors, or through the MDS), every byte right (run.sh's unreach check).
# Then the deleg check, whose write part needs a cluster that proxies.
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.1 --checks unreach,deleg "$@"
