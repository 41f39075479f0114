/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --landscape-study /work/wt/early/bench/measure_landscape/landscape-vorpalio-read.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vorpalio-read.toml --landscape-study /work/wt/early/bench/measure_landscape/landscape-vpicio-flat.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vpicio-flat.toml --out /tmp/early/out2-verify.json
start 2026-11-28T04:25:21Z load 1.49 1.55 2.55
end 2026-11-28T04:26:29Z load 1.77 1.62 2.50 git 9a9b437
