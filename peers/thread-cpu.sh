#!/usr/bin/env bash
# Usage: peers/thread-cpu.sh --pid PID [--seconds S]
#
# CPU time each thread of process PID took over S seconds (default 10): user + system clock ticks from
# /proc/PID/task/TID/stat read at the start and the end of the window (10 ms ticks: a thread's figure is exact to
# 0.01 s). For a back-end whose worker thread spins on one CPU, what its other threads take (a flight recorder's,
# a metrics endpoint's, GC's) is what they can take from that CPU or from the peer's: the cost of having them on,
# counted rather than inferred from a throughput ratio.
#
# Output: one line "WINDOW pid= seconds= threads= cpu_s=" (every thread's CPU over the window, threads that ended
# in it counted up to their last reading), then one "THREAD tid= name= cpu_s= share=" per thread that took any,
# busiest first (share: of one CPU over the window, in %), then "OTHERS cpu_s= share=": every thread but the
# busiest. Exits 1 when PID is not running at the start or at the end.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

pid='' seconds=10
while [ $# -gt 0 ]; do
  case $1 in
    --pid) pid=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) usage ;;
    *) peers_die "unknown option $1" ;;
  esac
done
[[ "$pid" =~ ^[0-9]+$ ]] || peers_die "--pid must be a process id, got '$pid'"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [ "$(awk -v s="$seconds" 'BEGIN { print (s > 0) }')" = 1 ] \
  || peers_die "--seconds must be a number > 0, got '$seconds'"

# "tid ticks name" per thread; the name is between the first '(' and the last ')' of stat (it may hold spaces and
# parentheses), utime and stime are fields 14 and 15, i.e. the 12th and 13th after the ')'.
snapshot() {
  local stat line name rest
  for stat in /proc/"$pid"/task/*/stat; do
    line=$(cat "$stat" 2>/dev/null) || continue
    name=${line#*(}; name=${name%)*}
    rest=${line##*) }
    # shellcheck disable=SC2086 # word splitting of the fields is the point
    set -- $rest
    printf '%s %s %s\n' "$(basename "$(dirname "$stat")")" "$(( ${12} + ${13} ))" "${name// /_}"
  done
}

[ -d "/proc/$pid/task" ] || peers_die "no process $pid"
ticks=$(getconf CLK_TCK)
before=$(snapshot)
t0=$(date +%s.%N)
sleep "$seconds"
after=$(snapshot)
t1=$(date +%s.%N)
[ -d "/proc/$pid/task" ] || peers_die "process $pid ended during the window"

awk -v ticks="$ticks" -v t0="$t0" -v t1="$t1" -v pid="$pid" '
  NR == FNR { b[$1] = $2; next }
  { d = $2 - ($1 in b ? b[$1] : 0); seen[$1] = 1; cpu[$1] = d; name[$1] = $3; total += d; n++ }
  END {
    el = t1 - t0
    printf "WINDOW pid=%s seconds=%.2f threads=%d cpu_s=%.2f\n", pid, el, n, total / ticks
    # busiest first: a selection sort over the few dozen threads a JVM has
    m = 0
    for (t in cpu) if (cpu[t] > 0) order[++m] = t
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (cpu[order[j]] > cpu[order[i]]) { x = order[i]; order[i] = order[j]; order[j] = x }
    for (i = 1; i <= m; i++) {
      t = order[i]
      printf "THREAD tid=%s name=%s cpu_s=%.2f share=%.3f%%\n", t, name[t], cpu[t] / ticks, cpu[t] / ticks / el * 100
    }
    others = total - (m > 0 ? cpu[order[1]] : 0)
    printf "OTHERS cpu_s=%.2f share=%.3f%%\n", others / ticks, others / ticks / el * 100
  }' <(printf '%s\n' "$before") <(printf '%s\n' "$after")
