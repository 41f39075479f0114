#!/bin/bash
# interleaved wall time per traced H5Dread (32 KiB, resident memory): main's runtime vs skeltime2's
P=/work/wt/skeltime2/build/bench/c/callcost
cd /tmp/st2 && mkdir -p rc && cd rc && echo '<Parameters/>' > empty.xml
for M in "hdf5read 20000" "hdf5read1m 2000"; do for i in $(seq 1 8); do
  for L in main:/work/main/build/runtime/libiotune.so new:/work/wt/skeltime2/build/runtime/libiotune.so plain:; do
    n=${L%%:*}; lib=${L#*:}
    if [ $n = plain ]; then r=$($P $M d); else
    r=$(LD_PRELOAD=$lib IOTUNE_CONFIG=$PWD/empty.xml IOTUNE_PROFILE=$PWD/p.json IOTUNE_TRACE=1 $P $M d); fi
    echo "${M%% *}:$n $r"
  done
done; done
