#!/usr/bin/env bash
# A single-host Ceph cluster with CephFS, for the striping tests (docs/striping.md):
# 1 monitor, 1 manager, 3 OSDs on file-backed BlueStore (memstore with IOTUNE_CEPH_STORE=memstore),
# 1 MDS, the file system "cephfs" mounted through ceph-fuse at DIR/mnt. Everything lives in DIR
# (configuration, keyring, daemons' data, logs, pid files, admin sockets): no systemd, no
# containers, nothing under /etc or /var/lib/ceph. Needs root (or /dev/fuse access) and the
# packages ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse (installed by scripts/install.sh
# with the test packages).
#
#   scripts/cephfs.sh start DIR    start (or say it runs already); prints the mount point
#   scripts/cephfs.sh stop DIR     unmount and end this cluster's daemons (by their pid files)
#   scripts/cephfs.sh status DIR   "running MNT" (exit 0) or "stopped" (exit 1)
#
# Memory is bounded by small caches (osd_memory_target, bluestore cache, mds cache, mon's
# rocksdb); measured in docs/striping.md. Exit status 3 = the packages are missing.
set -euo pipefail
say() { printf 'cephfs: %s\n' "$*" >&2; }
[ $# -eq 2 ] || { say "usage: $0 start|stop|status DIR"; exit 2; }
cmd=$1
mkdir -p "$2"
D=$(cd "$2" && pwd)
CONF=$D/ceph.conf
MNT=$D/mnt
NOSD=3
STORE=${IOTUNE_CEPH_STORE:-bluestore}
WAIT=${IOTUNE_CEPH_WAIT:-180}
DAEMONS=(mon.a mgr.x osd.0 osd.1 osd.2 mds.a)

mounted() { grep -qs "^[0-9]* [0-9]* [0-9:]* / $MNT .* - fuse.ceph-fuse " /proc/self/mountinfo; }
alive() { # pid file's process is alive and is the daemon named in it
  local f=$D/run/$1.pid
  [ -s "$f" ] || return 1
  local pid
  pid=$(cat "$f")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$CONF"
}
ceph_() { timeout 30 ceph -c "$CONF" "$@"; }

# The mount's FUSE connection aborted (a client that hangs would keep umount waiting forever):
# /sys/fs/fuse/connections/<minor of the mount's device>/abort.
abort_fuse() {
  local dev
  dev=$(awk -v m="$MNT" '$5 == m && $9 == "fuse.ceph-fuse" {print $3}' /proc/self/mountinfo | head -1)
  [ -n "$dev" ] || return 0
  [ -d /sys/fs/fuse/connections ] && ! grep -qs ' /sys/fs/fuse/connections ' /proc/mounts &&
    mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
  [ -w "/sys/fs/fuse/connections/${dev#*:}/abort" ] && echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort"
}

unmount() {
  mounted || return 0
  timeout 10 umount "$MNT" 2>/dev/null && return 0
  abort_fuse
  timeout 10 umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
}

stop() {
  unmount
  local pids=()
  for f in "$D"/run/*.pid; do
    [ -e "$f" ] || continue
    local name
    name=$(basename "$f" .pid)
    local pid
    pid=$(cat "$f" 2>/dev/null) || pid= # a daemon ending now removes its own pid file
    if [ -n "$pid" ] && alive "$name"; then pids+=("$pid"); fi
    rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  for _ in $(seq 20); do # up to 2 s, then KILL what is left (a scratch cluster: nothing to keep)
    local left=()
    for p in "${pids[@]}"; do [ -d "/proc/$p" ] && left+=("$p"); done
    [ ${#left[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  kill -9 "${left[@]}" 2>/dev/null || true
}

status() {
  if mounted && alive mon.a && alive mds.a; then
    echo "running $MNT"
    return 0
  fi
  echo stopped
  return 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_conf() {
  local fsid=$1 p2=$2 p1=$3
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$p2,v1:127.0.0.1:$p1]
mon initial members = a
public network = 127.0.0.0/8
keyring = $D/keyring
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
crash dir = $D/crash
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 5
mon rocksdb options = write_buffer_size=8388608,compression=kNoCompression
mgr initial modules =
ms bind msgr1 = true
debug ms = 0
[mon]
mon data = $D/mon.\$id
[mgr]
mgr data = $D/mgr.\$id
[osd]
osd data = $D/osd.\$id
osd objectstore = $STORE
osd memory target = 939524096
osd memory cache min = 33554432
bluestore cache autotune = false
bluestore cache size = 67108864
bluestore block create = true
bluestore block size = 1073741824
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mount = false
bluestore rocksdb options = write_buffer_size=8388608,max_write_buffer_number=2,compression=kNoCompression
memstore device bytes = 536870912
osd op num shards = 1
osd op num threads per shard = 2
osd crush update on start = true
[mds]
mds data = $D/mds.\$id
mds cache memory limit = 134217728
[client]
admin socket =
client mount timeout = 30
EOF
}

daemon() { # type id: started in the background (it forks; its pid file is DIR/run/type.id.pid)
  "ceph-$1" -c "$CONF" -i "$2" >>"$D/log/$1.$2.out" 2>&1 || { say "ceph-$1 $2 failed (logs: $D/log)"; exit 1; }
}

wait_for() { # description, command...: up to WAIT seconds
  local what=$1
  shift
  local end=$((SECONDS + WAIT))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { say "timed out waiting for $what (logs: $D/log)"; return 1; }
    sleep 0.2
  done
}

fs_active() { ceph_ mds stat 2>/dev/null | grep -q 'up:active'; }

start() {
  for b in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse monmaptool ceph-authtool; do
    command -v "$b" >/dev/null || { say "$b not installed (scripts/install.sh installs it with the test packages)"; exit 3; }
  done
  [ -e /dev/fuse ] || { say "/dev/fuse missing: ceph-fuse cannot mount"; exit 3; }
  if status >/dev/null; then
    say "already running"
    echo "$MNT"
    return 0
  fi
  if [ ! -e "$CONF" ] && [ -n "$(ls -A "$D" | grep -vx mnt)" ]; then
    say "$D holds other files: give an empty or a former cluster's folder"
    exit 2
  fi
  stop # a half-started or crashed cluster: start afresh
  local t0=$SECONDS
  find "$D" -mindepth 1 -maxdepth 1 ! -name mnt -exec rm -rf {} +
  mkdir -p "$D/run" "$D/log" "$D/crash" "$MNT" "$D/mon.a" "$D/mgr.x" "$D/mds.a"
  local fsid p1 p2
  fsid=$(cat /proc/sys/kernel/random/uuid)
  p2=$(free_port)
  p1=$(free_port)
  write_conf "$fsid" "$p2" "$p1"
  local K=$D/keyring
  ceph-authtool --create-keyring "$K" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$K" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mds 'allow *' --cap mgr 'allow *'
  ceph-authtool "$K" --gen-key -n mgr.x --cap mon 'allow profile mgr' --cap osd 'allow *' \
    --cap mds 'allow *'
  ceph-authtool "$K" --gen-key -n mds.a --cap mon 'allow profile mds' --cap osd 'allow *' \
    --cap mds 'allow' --cap mgr 'allow profile mds'
  for i in $(seq 0 $((NOSD - 1))); do
    ceph-authtool "$K" --gen-key -n "osd.$i" --cap mon 'allow profile osd' --cap osd 'allow *' \
      --cap mgr 'allow profile osd'
  done
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$p2,v1:127.0.0.1:$p1]" "$D/monmap" >/dev/null
  ceph-mon -c "$CONF" -i a --mkfs --monmap "$D/monmap" --keyring "$K" >"$D/log/mkfs.mon.log" 2>&1
  # side by side: the OSDs' file systems made (BlueStore's mkfs takes seconds; without the
  # monitor), the monitor and the manager started; then one ceph session for the cluster's maps
  local i uuids=()
  for i in $(seq 0 $((NOSD - 1))); do
    uuids+=("$(cat /proc/sys/kernel/random/uuid)")
    mkdir -p "$D/osd.$i"
    ceph-osd -c "$CONF" -i "$i" --mkfs --no-mon-config --osd-uuid "${uuids[$i]}" \
      >"$D/log/mkfs.osd.$i.log" 2>&1 &
  done
  daemon mon a
  daemon mgr x &
  wait || { say "an OSD's mkfs or the manager failed (logs: $D/log)"; stop; exit 1; }
  {
    for i in $(seq 0 $((NOSD - 1))); do echo "osd new ${uuids[$i]} $i"; done
    echo "osd pool create cephfs_metadata 8"
    echo "osd pool create cephfs_data 8"
    echo "fs new cephfs cephfs_metadata cephfs_data"
  } | ceph_ >"$D/log/maps.out" 2>&1 || { say "the cluster's maps failed (log: $D/log/maps.out)"; stop; exit 1; }
  for i in $(seq 0 $((NOSD - 1))); do daemon osd "$i" & done
  daemon mds a &
  wait || { say "a daemon failed to start (logs: $D/log)"; stop; exit 1; }
  wait_for "the MDS active" fs_active
  timeout 30 ceph-fuse -c "$CONF" --id admin "$MNT" --pid-file "$D/run/client.admin.pid" \
    >"$D/log/fuse.out" 2>&1 || { say "ceph-fuse failed (logs: $D/log)"; stop; exit 1; }
  wait_for "the mount" mounted
  say "started in $((SECONDS - t0)) s: $MNT"
  echo "$MNT"
}

case "$cmd" in
  start) start ;;
  stop) stop; say "stopped" ;;
  status) status ;;
  *) say "usage: $0 start|stop|status DIR"; exit 2 ;;
esac
