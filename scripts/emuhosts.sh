#!/bin/bash
# Several emulated hosts on one machine, for MPICH jobs that must see more than one node
# (issue 28; docs/scale.md, "Many hosts on one machine"). Root only.
#
#   scripts/emuhosts.sh up N        N network namespaces iot28-h1..hN on a bridge (10.228.0.i/24;
#                                   this machine 10.228.0.254), each resolving h1..hN and this
#                                   machine's name (/etc/netns/iot28-hI/hosts)
#   scripts/emuhosts.sh down N      removes them
#   scripts/emuhosts.sh check       exit 0 when namespaces can be made here (else says why)
#   scripts/emuhosts.sh launch -x hI CMD...
#                                   Hydra's launcher (-launcher ssh -launcher-exec THIS launch):
#                                   runs CMD in hI's network namespace, in a UTS namespace of its
#                                   own whose host name is hI
#   scripts/emuhosts.sh run N ARGS...
#                                   mpiexec.mpich over h1..hN (round robin unless ARGS say
#                                   otherwise: pass -ppn or -hosts)
#
# Each rank then has its own host name (MPI_Get_processor_name, gethostname) and its own network
# interface, so Hydra, ROMIO (cb_config_list, aggregators per node) and the runtime's host count
# see N nodes. Memory, the file system and the other namespaces stay shared: the ranks still read
# and write the same files.
set -euo pipefail
# EMUHOSTS_PREFIX / EMUHOSTS_NET: another set beside this one (the namespaces' and the
# bridge's names, the /24 network), for runs side by side
PREFIX=${EMUHOSTS_PREFIX:-iot28}
BRIDGE=${PREFIX}-br
NET=${EMUHOSTS_NET:-10.228.0}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

hosts_file() { # N: the hosts file every namespace sees
    printf '127.0.0.1 localhost\n%s.254 %s\n' "$NET" "$(hostname)"
    for i in $(seq 1 "$1"); do printf '%s.%d h%d\n' "$NET" "$i" "$i"; done
}

up() {
    local n=$1
    down "$n" 2>/dev/null || true
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.254/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for i in $(seq 1 "$n"); do
        local ns=$PREFIX-h$i
        ip netns add "$ns"
        ip link add "$PREFIX-v$i" type veth peer name eth0 netns "$ns"
        ip link set "$PREFIX-v$i" master "$BRIDGE" up
        ip netns exec "$ns" ip addr add "$NET.$i/24" dev eth0
        ip netns exec "$ns" ip link set eth0 up
        ip netns exec "$ns" ip link set lo up
        mkdir -p "/etc/netns/$ns"
        hosts_file "$n" >"/etc/netns/$ns/hosts"
    done
}

down() {
    local n=${1:-16}
    for i in $(seq 1 "$n"); do
        ip netns del "$PREFIX-h$i" 2>/dev/null || true
        rm -rf "/etc/netns/$PREFIX-h$i"
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

check() {
    [ "$(id -u)" = 0 ] || { echo "emuhosts: needs root (ip netns, unshare --uts)"; return 1; }
    command -v ip >/dev/null || { echo "emuhosts: no ip command (iproute2)"; return 1; }
    command -v unshare >/dev/null || { echo "emuhosts: no unshare (util-linux)"; return 1; }
    local ns=$PREFIX-check$$
    if ! err=$(ip netns add "$ns" 2>&1); then
        echo "emuhosts: cannot create a network namespace: $err"
        return 1
    fi
    if ! err=$(ip netns exec "$ns" unshare --uts sh -c 'hostname probe' 2>&1); then
        ip netns del "$ns"
        echo "emuhosts: cannot create a UTS namespace: $err"
        return 1
    fi
    ip netns del "$ns"
    if ! err=$(ip link add "$PREFIX-chk$$" type bridge 2>&1); then
        echo "emuhosts: cannot create a bridge: $err"
        return 1
    fi
    ip link del "$PREFIX-chk$$"
}

launch() { # -x HOST CMD...: as ssh would run CMD on HOST (one shell command line)
    [ "${1:-}" = -x ] && shift
    local host=$1
    shift
    exec ip netns exec "$PREFIX-$host" unshare --uts sh -c 'hostname "$0" && eval "exec $*"' \
        "$host" "$@"
}

run_mpiexec() {
    local n=$1
    shift
    local hosts
    hosts=$(seq -s, -f 'h%g' 1 "$n")
    exec mpiexec.mpich -launcher ssh -launcher-exec "$HERE" -hosts "$hosts" "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
up) up "${1:?N}" ;;
down) down "${1:-16}" ;;
check) check ;;
launch | -x) launch "$@" ;;
run | mpiexec) run_mpiexec "$@" ;;
*) sed -n '2,/^set/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
