/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --landscape-study /work/wt/early/bench/measure_landscape/landscape-ior-hdf5.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-ior-hdf5.toml --landscape-study /work/wt/early/bench/measure_landscape/landscape-h5bench-write.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-h5bench-write.toml --out /tmp/early/out1-verify.json
start 2026-11-28T04:24:25Z load 1.55 1.56 2.62
end 2026-11-28T04:25:21Z load 1.49 1.55 2.55 git 9a9b437
