/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --early-pairs 0 --noisier 2 --landscape-study /work/wt/early/bench/measure_landscape/landscape-held.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds4-6.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds7-10.csv@vorpalio --space /work/wt/early/bench/measure_landscape/spaces/grid-vorpalio.toml --out /tmp/early/vorpalio-x2-early0.json
start 2026-11-28T03:26:09Z load 11.73 7.17 3.63
end 2026-11-28T03:27:16Z load 10.67 7.80 4.10 git 8617326
