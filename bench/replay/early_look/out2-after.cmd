/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --landscape-study /work/wt/early/bench/measure_landscape/landscape-vorpalio-read.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vorpalio-read.toml --landscape-study /work/wt/early/bench/measure_landscape/landscape-vpicio-flat.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vpicio-flat.toml --out /tmp/early/out2-after.json
start 2026-11-28T03:45:59Z load 1.97 3.11 3.92
end 2026-11-28T03:47:01Z load 2.11 2.94 3.80 git 73dbdad
