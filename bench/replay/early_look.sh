#!/usr/bin/env bash
# Whole studies replayed before and after the changes of 2026-11-28 (issue 25), each variant
# on the same seeds: `before` (--early-pairs 0: Pocock's level at every look; only `local`'s
# verification stops below --min-gain), `early` (six pairs all won significant), `after`
# (also every strategy's verification stops below --min-gain: iotune's defaults now).
# Usage: bench/replay/early_look.sh OUTDIR [SEEDS [GROUP...]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: early_look.sh OUTDIR [SEEDS]}
seeds=${2:-100}
shift $(( $# > 1 ? 2 : 1 ))
groups=" ${*:-gcrmio-x2 vorpalio-x2 held out1 out2 ompio} "
py=${PYTHON:-$root/.venv/bin/python}
m=$root/bench/measure_landscape
held=$m/landscape-held.csv,$m/landscape-held-rounds4-6.csv,$m/landscape-held-rounds7-10.csv
ompio=$m/landscape-ompio-vorpalio.csv,$m/landscape-ompio-vorpalio-round1.csv,$m/landscape-ompio-vorpalio-round2.csv,$m/landscape-ompio-vorpalio-rounds3-4.csv
mkdir -p "$out"
run() {  # NAME ARGS...: one replay, its command and times beside its JSON
  local name=$1; shift
  [[ $groups == *" $name "* ]] || return 0
  local -A variant=([before]="--early-pairs 0 --min-gain-stop-local-only"
                    [early]="--min-gain-stop-local-only" [after]="" [verify]="")
  for v in ${VARIANTS:-before early after}; do
    local f=$out/$name-$v
    [[ -e $f.json ]] && continue  # kept from an earlier call: rerun by removing it
    # shellcheck disable=SC2206  # a variant's options are words
    local cmd=("$py" "$here/replay.py" --studies --seeds "$seeds" --strategies tpe,local
               ${variant[$v]} "$@" --out "$f.json")
    { echo "${cmd[*]}"; echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$f.cmd"
    PYTHONPATH=$root/src nice -n 19 "${cmd[@]}" > "$f.log" 2>&1
    echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) git $(git -C "$root" rev-parse --short HEAD)" >> "$f.cmd"
  done
}
run gcrmio-x2 --noisier 2 --landscape-study "$held@gcrmio" --space "$m/spaces/grid-gcrmio.toml" --flat
run vorpalio-x2 --noisier 2 --landscape-study "$held@vorpalio" --space "$m/spaces/grid-vorpalio.toml"
run held --landscape-study "$held@gcrmio" --space "$m/spaces/grid-gcrmio.toml" --flat \
  --landscape-study "$held@vorpalio" --space "$m/spaces/grid-vorpalio.toml"
run out1 --landscape-study "$m/landscape-ior-hdf5.csv" --space "$m/spaces/grid-ior-hdf5.toml" \
  --landscape-study "$m/landscape-h5bench-write.csv" --space "$m/spaces/grid-h5bench-write.toml"
run out2 --landscape-study "$m/landscape-vorpalio-read.csv" --space "$m/spaces/grid-vorpalio-read.toml" \
  --landscape-study "$m/landscape-vpicio-flat.csv" --space "$m/spaces/grid-vpicio-flat.toml"
run ompio --landscape-study "$ompio" --space "$m/spaces/grid-ompio-vorpalio.toml"
