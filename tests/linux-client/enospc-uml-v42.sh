#!/bin/sh
# Linux client tier: full data servers (issue 21): the stock NFSv4.2
# client writes until two 48 MiB data servers are full; every failing
# write is ENOSPC within a bound, earlier files read back, and space freed
# by rm is usable at once (run.sh's enospc check).
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.2 --checks enospc "$@"
