/work/main/.venv/bin/python /work/wt/early/bench/replay/replay.py --studies --seeds 100 --strategies tpe,local --noisier 2 --landscape-study /work/wt/early/bench/measure_landscape/landscape-held.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds4-6.csv,/work/wt/early/bench/measure_landscape/landscape-held-rounds7-10.csv@gcrmio --space /work/wt/early/bench/measure_landscape/spaces/grid-gcrmio.toml --flat --out /tmp/early/gcrmio-x2-verify.json
start 2026-11-28T04:21:31Z load 0.20 1.45 2.80
end 2026-11-28T04:22:40Z load 1.25 1.55 2.75 git 9a9b437
