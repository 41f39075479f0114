/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --min-gain-stop-local-only --landscape-study /work/wt/early/bench/measure_landscape/landscape-vorpalio-read.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vorpalio-read.toml --landscape-study /work/wt/early/bench/measure_landscape/landscape-vpicio-flat.csv --space /work/wt/early/bench/measure_landscape/spaces/grid-vpicio-flat.toml --out /tmp/early/out2-early.json
start 2026-11-28T03:44:42Z load 1.74 3.40 4.07
end 2026-11-28T03:45:59Z load 1.97 3.11 3.92 git 73dbdad
