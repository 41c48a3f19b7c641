#!/bin/bash
# libFuzzer over each model reader, with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang and Debian's libclang-rt-14-dev):
#     test/fuzz/run.sh [EXECUTIONS] [READER...]      default 20000, all readers
# Readers: json (XGBoost and CatBoost JSON), ubj (XGBoost UBJSON), lightgbm
# (text), treelite (Treelite checkpoints). Each starts from a corpus seeded with the fixtures of its formats,
# first replays the inputs that once crashed it (test/fuzz/regressions/READER,
# kept as regression fixtures), then runs EXECUTIONS inputs. A sanitizer
# report, crash, leak or timeout fails the run, and its input is saved in
# test/fuzz/build/ for adding to the regressions. Prints executions per reader.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-20000}
shift || true
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=(json ubj lightgbm treelite)
CC=${FUZZ_CC:-clang}
build=test/fuzz/build
mkdir -p "$build"
srcs=$(make -s -f - <<'MK'
include src/sources.mk
all: ; @echo $(addprefix src/,$(TS_TOOL_SRCS))
MK
)
declare -A entry=([json]=ts_json_model_read [ubj]=ts_xgboost_ubj_read [lightgbm]=ts_lightgbm_read
                  [treelite]=ts_treelite_read)
declare -A seeds=([json]="test/fixtures/*.json" [ubj]="test/fixtures/*.ubj" [lightgbm]="test/fixtures/*.txt"
                  [treelite]="test/fixtures/*.tl")
status=0
for r in "${readers[@]}"; do
  bin=$build/fuzz_$r
  $CC -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc \
      -DTS_FUZZ_READER="${entry[$r]}" -o "$bin" test/fuzz/fuzz_reader.c $srcs -lm
  corpus=$build/corpus_$r
  mkdir -p "$corpus" "test/fuzz/regressions/$r"
  cp ${seeds[$r]} "$corpus"/
  if compgen -G "test/fuzz/regressions/$r/*" >/dev/null; then
    "$bin" test/fuzz/regressions/$r/* >"$build/replay_$r.log" 2>&1 \
      || { echo "fuzz $r: a regression input fails again"; tail -30 "$build/replay_$r.log"; status=1; continue; }
  fi
  if "$bin" -runs="$runs" -max_len=262144 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/${r}_" "$corpus" >"$build/fuzz_$r.log" 2>&1; then
    echo "fuzz $r: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz_$r.log" | grep -o '[0-9]*$') executions, no report ($(grep -o 'stat::peak_rss_mb: *[0-9]*' "$build/fuzz_$r.log" | grep -o '[0-9]*$') MB peak)"
  else
    echo "fuzz $r: FAILED"; grep -A25 "ERROR\|SUMMARY\|runtime error" "$build/fuzz_$r.log" | head -40; status=1
  fi
done
exit $status
