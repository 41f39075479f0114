#!/bin/bash
# Data check of the OMPIO landscape's write paths: each (io, fcoll, aggregators, transfer mode)
# of grid-ompio-vorpalio.toml (buffer per aggregator 1M, the smallest: the most aggregation
# rounds) writes VORPAL-IO --block 100,100,80 with libiotune.so preloaded, then reads it back
# and verifies every value (vorpalio --read; exit 3 on a mismatch). Not timed: nice 19.
K=/work/main/.venv/libexec/iotune/openmpi/kernels
LIB=/work/main/.venv/lib/iotune/openmpi/libiotune.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$(mktemp -d /tmp/ompio-check.XXXX); cd $D
n=0; bad=0
run() {  # $1 label, rest: env assignments
  local label=$1; shift
  for mode in collective independent; do
    out=$(env "$@" timeout 120 nice -n 19 mpiexec.openmpi --oversubscribe -n 2 -x LD_PRELOAD=$LIB \
          $K/vorpalio --block 100,100,80 --mode $mode --read --file $D/v.h5 2>&1)
    rc=$?
    v=$(echo "$out" | grep -o '"phase":"read".*"verified":[a-z]*' | grep -o '"verified":[a-z]*')
    n=$((n+1)); [ $rc -eq 0 ] && [ "$v" = '"verified":true' ] || bad=$((bad+1))
    echo "$label transfer_mode=$mode: exit $rc $v"
    rm -f $D/v.h5
  done
}
run "io=romio321" OMPI_MCA_io=romio321
for f in "" dynamic dynamic_gen2 two_phase vulcan; do
  for a in "" 1 2; do
    e=(OMPI_MCA_io=ompio OMPI_MCA_io_ompio_bytes_per_agg=1048576)
    [ -n "$f" ] && e+=(OMPI_MCA_fcoll=$f)
    [ -n "$a" ] && e+=(OMPI_MCA_io_ompio_num_aggregators=$a)
    run "fcoll=${f:-unset} io_ompio_num_aggregators=${a:-unset} io_ompio_bytes_per_agg=1M" "${e[@]}"
  done
done
echo "$n runs, $bad failed or unverified"
cd /; rm -rf $D
