#!/bin/sh
# Linux client tier: as qemu-v41.sh over NFSv4.2.
exec bash "$(dirname "$0")/run.sh" --backend qemu --vers 4.2 --checks posix,data "$@"
