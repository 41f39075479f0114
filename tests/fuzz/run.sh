#!/usr/bin/env bash
# Builds the control-file fuzzers with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for a bounded time from its checked-in seed corpus
# (tests/fuzz/corpus/<harness>, regressions/<harness>). New inputs go to a scratch folder,
# never into the checkout. Exits 0 when nothing was found, 1 on a finding (the input is kept
# in the scratch folder and named on the last lines), 77 when clang or libFuzzer is missing.
#   tests/fuzz/run.sh [SECONDS_PER_HARNESS (default 20)] [HARNESS[:SECONDS]...]
#   (harnesses: controlfile value match; all three by default)
#   IOTUNE_FUZZ_WORK=DIR   scratch folder (default: a fresh temporary one, removed on success)
#   IOTUNE_FUZZ_ARGS=...   more libFuzzer options
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-20}
shift || true
harnesses=() budget=()
for arg in "${@:-controlfile value match}"; do
  for h in $arg; do # HARNESS or HARNESS:SECONDS
    harnesses+=("${h%%:*}")
    budget+=("$([[ $h == *:* ]] && echo "${h#*:}" || echo "$seconds")")
  done
done
CC=${IOTUNE_FUZZ_CC:-clang}
say() { printf 'iotune-fuzz: %s\n' "$*"; }

work=${IOTUNE_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/iotune-fuzz.XXXXXX")}
mkdir -p "$work"
probe() { printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }' >"$work/probe.c"
  "$CC" -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" >/dev/null 2>&1; }
if ! command -v "$CC" >/dev/null 2>&1 || ! probe; then
  say "skipped: $CC with libFuzzer and the sanitizers is not installed (Debian: clang libclang-rt-dev)"
  [ -n "${IOTUNE_FUZZ_WORK:-}" ] || rm -rf "$work"
  exit 77
fi

# The parser's sources: those of the iotune_settings library (runtime/CMakeLists.txt).
sources=$(awk '/^add_library\(iotune_settings /{on=1} on{for(i=1;i<=NF;i++) if($i ~ /^src\/.*\.c\)?$/) {sub(/\)$/,"",$i); print "'"$root"'/runtime/" $i}} on&&/\)/{on=0}' \
  "$root/runtime/CMakeLists.txt")
[ -n "$sources" ] || { say "cannot find the sources of iotune_settings in runtime/CMakeLists.txt"; exit 2; }
mkdir -p "$work/generated"
python3 "$root/tools/gen_params.py" "$root/src/iotune/data/params.tsv" "$work/generated/params_gen.h"
python3 "$root/tools/gen_costs.py" "$root/src/iotune/data/params.tsv" "$root/src/iotune/data/costs.tsv" \
  "$work/generated/costs_gen.h"
flags=(-g -O1 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=all -I"$root/runtime/src" -I"$work/generated" -I"$here")
# the parser once (-fsanitize=fuzzer-no-link: instrumented, no main), then each harness
mkdir -p "$work/obj"
objects=()
for src in $sources; do
  obj="$work/obj/$(basename "$src" .c).o"
  "$CC" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$src" -o "$obj"
  objects+=("$obj")
done
for h in "${harnesses[@]}"; do
  "$CC" "${flags[@]}" "$here/fuzz_$h.c" "${objects[@]}" -lexpat -lm -o "$work/fuzz_$h"
done

status=0
for i in "${!harnesses[@]}"; do
  h=${harnesses[$i]} seconds=${budget[$i]}
  mkdir -p "$work/new_$h" "$work/found_$h"
  say "$h: ${seconds} s from $(ls "$here/corpus/$h" | wc -l) seed inputs and $(ls "$here/regressions/$h" | wc -l) regressions"
  # shellcheck disable=SC2086
  if ! (cd "$work/found_$h" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$work/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -print_final_stats=1 $([ -f "$here/$h.dict" ] && echo "-dict=$here/$h.dict") ${IOTUNE_FUZZ_ARGS:-} "$work/new_$h" "$here/corpus/$h" "$here/regressions/$h" \
    >"$work/$h.log" 2>&1); then
    status=1
    tail -n 40 "$work/$h.log"
    say "$h: FOUND a problem; the input: $(ls -d "$work/found_$h"/* 2>/dev/null | tr '\n' ' ')"
    say "$h: fix it, then add the input to tests/fuzz/regressions/$h/"
  else
    say "$h: $(grep -E '^stat::number_of_executed_units' "$work/$h.log" | awk '{print $2}') runs," \
      "$(ls "$work/new_$h" | wc -l) new inputs, nothing found"
  fi
done
if [ "$status" = 0 ] && [ -z "${IOTUNE_FUZZ_WORK:-}" ]; then
  rm -rf "$work"
else
  say "scratch folder kept: $work"
fi
exit "$status"
