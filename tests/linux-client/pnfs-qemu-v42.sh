#!/bin/sh
# Linux client tier, pNFS: as pnfs-qemu-v41.sh over NFSv4.2.
exec bash "$(dirname "$0")/pnfs-run.sh" --backend qemu --vers 4.2 --check data "$@"
