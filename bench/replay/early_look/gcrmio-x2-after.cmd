/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --noisier 2 --landscape-study /work/wt/early/bench/measure_landscape/landscape-held.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds4-6.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds7-10.csv@gcrmio --space /work/wt/early/bench/measure_landscape/spaces/grid-gcrmio.toml --flat --out /tmp/early/gcrmio-x2-after.json
start 2026-11-28T03:33:39Z load 4.60 5.56 4.36
end 2026-11-28T03:37:14Z load 5.20 5.60 4.64 git 8617326
