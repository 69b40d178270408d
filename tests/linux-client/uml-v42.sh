#!/bin/sh
# Linux client tier: as uml-v41.sh over NFSv4.2 (where the client reports
# the mirror's failure with LAYOUTERROR).
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.2 --checks posix,data,mirror,ec "$@"
