/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --early-pairs 6 --noisier 2 --landscape-study /work/wt/early/bench/measure_landscape/landscape-held.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds4-6.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds7-10.csv@gcrmio --space /work/wt/early/bench/measure_landscape/spaces/grid-gcrmio.toml --flat --out /tmp/early/gcrmio-x2-early6.json
start 2026-11-28T03:23:43Z load 8.88 4.21 2.22
end 2026-11-28T03:26:09Z load 11.73 7.17 3.63 git 8617326
