#!/bin/sh
# Linux client tier, pNFS: as pnfs-uml-v41.sh over NFSv4.2.
exec bash "$(dirname "$0")/pnfs-run.sh" --backend uml --vers 4.2 --check data "$@"
