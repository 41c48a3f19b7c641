#!/bin/bash
# The GPU service's executor killed with SIGKILL: the executor holds the CUDA
# contexts and is not a postmaster child, so its death must cost no session
# (the postmaster would end them all for one of its own children), and the
# worker must fork a new executor that reports its devices again. Needs a
# running server with pg_treeshap preloaded (test/run.sh, test/gpu-check.sh)
# and the right to kill the server's processes (root, or the server's user).
set -u
q() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
status=0
check() { if [ "$1" = 0 ]; then echo "ok: $2"; else echo "FAIL: $2"; status=1; fi; }

q "CREATE EXTENSION IF NOT EXISTS pg_treeshap" >/dev/null
# the service as it runs once it is up (a freshly started server's may still be starting)
ready() {
  for _ in $(seq 100); do
    [ "$(q "SELECT executor_pid IS NOT NULL AND service <> 'starting' FROM treeshap.gpu_status LIMIT 1")" = t ] && return
    sleep 0.1
  done
}
ready
IFS='|' read -r worker executor starts state <<<"$(q "SELECT service_pid, executor_pid, executor_starts, service FROM treeshap.gpu_status LIMIT 1")"
[ -n "$executor" ] || { echo "FAIL: no executor (service: $state)"; exit 1; }
devices=$(q "SELECT count(device) FROM treeshap.gpu_status")
other=$(mktemp)
psql -X -At -c "SELECT pg_sleep(3)::text || 'still connected'" >"$other" 2>&1 &
sleep 0.5
t0=$(date +%s.%N)
kill -9 "$executor"
for _ in $(seq 100); do
  IFS='|' read -r w2 e2 s2 st2 <<<"$(q "SELECT service_pid, executor_pid, executor_starts, service FROM treeshap.gpu_status LIMIT 1")"
  [ -n "$e2" ] && [ "$e2" != "$executor" ] && [ "$st2" != starting ] && break
  sleep 0.1
done
t1=$(date +%s.%N)
wait
check "$([ -n "$e2" ] && [ "$e2" != "$executor" ] && echo 0 || echo 1)" \
  "a new executor replaced the killed one (pid $executor -> ${e2:-none}, $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s)"
check "$([ "$w2" = "$worker" ] && echo 0 || echo 1)" "the worker survived (pid $worker -> $w2)"
check "$([ "$s2" = $((starts + 1)) ] && echo 0 || echo 1)" "one more executor start ($starts -> $s2)"
check "$([ "$st2" = "$state" ] && [ "$(q "SELECT count(device) FROM treeshap.gpu_status")" = "$devices" ] && echo 0 || echo 1)" \
  "the new executor found the same devices (service $st2, $devices device row(s))"
check "$(grep -q "still connected" "$other" && echo 0 || echo 1)" \
  "another session kept its connection: $(tr '\n' ' ' <"$other")"
rm -f "$other"

# a request on the executor when it dies is sent again, once, to the next executor: the
# client sees a slower answer, and treeshap.gpu_status counts it
ready
retried=$(q "SELECT requests_retried FROM treeshap.gpu_status LIMIT 1")
e3=$(q "SELECT executor_pid FROM treeshap.gpu_status LIMIT 1")
out=$(mktemp)
(sleep 0.5; kill -9 "$e3") &
t0=$(date +%s.%N)
psql -X -At -c "SELECT round(treeshap._service_ping(2000))" >"$out" 2>&1
t1=$(date +%s.%N)
wait
retried2=$(q "SELECT requests_retried FROM treeshap.gpu_status LIMIT 1")
check "$(grep -qx '[0-9]*' "$out" && [ "$retried2" = $((retried + 1)) ] && echo 0 || echo 1)" \
  "a request in flight when the executor died was answered by the next executor after $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s (its answer: $(tr '\n' ' ' <"$out"); requests_retried $retried -> $retried2)"

# a second failure of the same request is an ERROR, within a second of the second kill
ready
e4=$(q "SELECT executor_pid FROM treeshap.gpu_status LIMIT 1")
(sleep 0.5; kill -9 "$e4"
 for _ in $(seq 100); do
   e5=$(q "SELECT executor_pid FROM treeshap.gpu_status WHERE service <> 'starting' LIMIT 1")
   [ -n "$e5" ] && [ "$e5" != "$e4" ] && break
   sleep 0.05
 done
 sleep 0.3; kill -9 "$e5"; date +%s.%N >"$out.kill") &
psql -X -At -c "SELECT treeshap._service_ping(5000)" >"$out" 2>&1
t_err=$(date +%s.%N)
wait
delay=$(awk "BEGIN { printf \"%.2f\", $t_err - $(cat "$out.kill") }")
check "$(grep -q "killed by signal 9 during this request" "$out" && grep -q "sent again once already" "$out" \
         && awk "BEGIN { exit !($delay < 1.0) }" && echo 0 || echo 1)" \
  "a request failed twice ended with an error ${delay} s after the second kill: $(tr '\n' ' ' <"$out")"
ready
check "$(q "SELECT treeshap._service_ping(0) < 100" 2>/dev/null | grep -qx t && echo 0 || echo 1)" \
  "the next executor answers the next request"
rm -f "$out" "$out.kill"

# a service that does not come back within 10 s (its worker stopped right after the
# executor died): under auto the call finishes on the CPU with one NOTICE, the CPU's
# result; under gpu it is an ERROR. The source's filter sleeps, so the call spans seconds.
# (A service with no device computes nothing: auto is the CPU already.)
ready
if [ "$devices" -gt 0 ]; then
psql -X -q -v ON_ERROR_STOP=1 -v model=svc_reg -v source=svc_src -v rows=40000 -f test/service_source.sql
sum_q="SELECT count(*) || ' ' || round(sum(base_value + (SELECT sum(v) FROM unnest(shap_values) v))::numeric, 4) FROM treeshap.explain_shap_wide('svc_reg', 'SELECT id, * FROM svc_src WHERE id % 1000 <> 0 OR pg_sleep(0.1) IS NOT NULL')"
cpu=$(psql -X -At -c "SET treeshap.device = cpu" -c "$sum_q" | tail -1)
for dev in auto gpu; do
  ready
  w=$(q "SELECT service_pid FROM treeshap.gpu_status LIMIT 1")
  e=$(q "SELECT executor_pid FROM treeshap.gpu_status LIMIT 1")
  (sleep 0.6; kill -9 "$e"; sleep 0.2; kill -STOP "$w"; sleep 12; kill -CONT "$w") &
  t0=$(date +%s.%N)
  psql -X -At -c "SET treeshap.device = $dev" -c "SET treeshap.batch_rows = 2000" -c "$sum_q" >"$out" 2>&1
  t1=$(date +%s.%N)
  wait
  took=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
  if [ $dev = auto ]; then
    check "$(grep -q "computing the rest of this call on the CPU" "$out" && [ "$(tail -1 "$out")" = "$cpu" ] && echo 0 || echo 1)" \
      "auto: a service not back within 10 s leaves the call to the CPU (${took} s): $(tail -1 "$out"), the CPU alone: $cpu"
  else
    check "$(grep -q "not back within 10 s" "$out" && echo 0 || echo 1)" \
      "gpu: a service not back within 10 s is an ERROR (${took} s): $(grep ERROR "$out")"
  fi
done
ready
q "DROP TABLE svc_src" >/dev/null
q "SELECT treeshap.drop_model('svc_reg')" >/dev/null
fi
rm -f "$out"

# a backend terminated while its request runs loses only that request: the executor drops it
psql -X -At -c "SELECT treeshap._service_ping(8000) /* terminated */" >/dev/null 2>&1 &
sleep 0.5
depth_running=$(q "SELECT queue_depth FROM treeshap.gpu_status LIMIT 1")
killed=$(q "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE query LIKE '%_service_ping(8000) /* terminated */%' AND pid <> pg_backend_pid()")
sleep 0.2
t0=$(date +%s.%N)
next=$(q "SELECT treeshap._service_ping(0) < 100" 2>&1)
t1=$(date +%s.%N)
wait
check "$([ "$killed" = 1 ] && [ "$next" = t ] && echo 0 || echo 1)" \
  "a backend terminated mid-request: the next request waited $(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }") s, not the 8 s of the dropped one"
depth_after=$(q "SELECT queue_depth FROM treeshap.gpu_status LIMIT 1")
check "$([ "$depth_running" = 1 ] && [ "$depth_after" = 0 ] && echo 0 || echo 1)" \
  "queue_depth counts the request with the executor ($depth_running), and none once its backend is gone ($depth_after)"
echo "service-check: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
