# Sourced by bench/citus_bench.sh and bench/halves_explain.sh, which set work,
# name, TS_CITUS_LABEL (their name in messages) and TS_CITUS_GPUS first: the
# machine's two halves (shares: bench/machine_halves.py's whole cores by NUMA
# node, or TS_BENCH_SHARES="LIST0 LIST1"; half: the CPUs of the first), the
# model's features, the servers' settings (treeshap.device from TS_BENCH_DEVICE,
# default cpu; TS_BENCH_CONF added), test/citus_cluster.sh, and cols and picks:
# the feature columns of a table and the same read from base b.
device=${TS_BENCH_DEVICE:-cpu}
# shellcheck disable=SC2207
shares=(${TS_BENCH_SHARES:-$(python3 bench/machine_halves.py)})
[ "${#shares[@]}" -ge 2 ] || { echo "$TS_CITUS_LABEL: FAIL (no two halves of the CPUs: ${shares[*]})"; exit 1; }
# the CPUs of the first half's share (a taskset list: 0-7,16-23)
half=$(python3 bench/machine_halves.py cpus "${shares[0]}" | wc -w)
features=$(python3 -c "import json; print(json.load(open('$work/$name.json'))['learner']['learner_model_param']['num_feature'])")
# (jit off: a server built with LLVM may lack its library, and JIT is noise here)
TS_CITUS_CONF="treeshap.device = $device
jit = off
${TS_BENCH_CONF:-}"
. test/citus_cluster.sh
cols=$(for j in $(seq 0 $((features - 1))); do printf ', f%d real' "$j"; done)
picks=$(for j in $(seq 0 $((features - 1))); do printf ', b.f%d' "$j"; done)
