#!/bin/sh
# Linux client tier, pNFS: as pnfs-mirror-uml-v41.sh over NFSv4.2 (where the
# client reports the failure with LAYOUTERROR).
exec bash "$(dirname "$0")/pnfs-run.sh" --backend uml --vers 4.2 --check mirror "$@"
