#!/bin/sh
# Linux client tier: Kerberos (issue 16): the stock NFSv4.2 client with
# rpc.gssd mounts braid-mds with sec=krb5, krb5i and krb5p in turn: a user
# with a ticket owns what it creates, one without gets EACCES, the POSIX
# workload passes, the user's data goes to the data servers through
# tightly coupled layouts with the user's own credential; a krb5p-only
# export refuses sec=sys (run.sh's krb5 check, against a realm of its own).
exec bash "$(dirname "$0")/run.sh" --backend uml --vers 4.2 --checks krb5 "$@"
