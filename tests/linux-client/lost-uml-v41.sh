#!/bin/sh
# Linux client tier: a mirrored data server SIGKILLed for good while the
# stock NFSv4.1 client reads, appends and creates (no error, every byte
# right, each operation bounded), then back and resilvered; then another
# declared lost and its copies rebuilt (run.sh's lost check; alone, since
# its kills and rebuild move other checks' files).
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.1 --checks lost "$@"
