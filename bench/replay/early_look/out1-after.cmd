/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --landscape-study /work/wt/early/bench/measure_landscape/landscape-ior-hdf5.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-ior-hdf5.toml --landscape-study /work/wt/early/bench/measure_landscape/landscape-h5bench-write.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-h5bench-write.toml --out /tmp/early/out1-after.json
start 2026-11-28T03:42:53Z load 2.08 4.17 4.38
end 2026-11-28T03:43:39Z load 1.79 3.77 4.23 git 8617326
