#!/usr/bin/env bash
# Usage: peers/ab-builds.sh --a REV [--b REV] [options] [--cmd TEMPLATE | --dpdk [-- bench-dpdk-vhost.sh args]]
#
# A/B of two builds of virtio4j: the CLI jar (cli/target/virtio4j.jar with its lib/) of revision A and of B
# (default: this work tree as it is, uncommitted changes included) is built once into a cache keyed by commit
# (the revision's tree from `git archive` in a scratch directory, no worktree registered in the shared repository,
# then `mvn -B -ntp -o -q package -DskipTests -pl cli -am` through ./virtio4j build; never mvn install), then
# one command is run for A and for B interleaved, A B B A A B B A ... (--pairs N), each run giving one figure.
# Before and after every run the cache-line ping-pong probe between --cpus (near ~165 ns / far ~680 ns here, see
# shared/docs/measuring.md) and, before it, the machine's busy % over 1 s (other load) are recorded.
#
# Output: "BUILD ..." per side, one "RUN ..." line per run (figure, seconds, busy_before, probe_ns=before/after),
# one "PAIR ..." line per pair (both figures, B/A, the probes), then "SUMMARY figure=..." (medians, min/max of each
# side, B/A as the geometric mean of the per-pair ratios with its 95% interval and half-width: `virtio4j paired`,
# bench --compare's statistics) and "SUMMARY figure=probe_ns ..." (did both sides see the same cache states?).
# The statistics run on jar B, or A, whichever has `paired`, else on this checkout's ./virtio4j.
#
# Options:
#   --a REV            side A: a git revision of this repository (commit, branch, tag, HEAD~3, ...); required
#   --b REV            side B (default: the work tree, uncommitted and untracked files included)
#   --cmd TEMPLATE     one run; {v4j} becomes the side's launcher (./virtio4j running that side's jar: its JDK
#                      finding and --enable-native-access), {jar} the jar, {side} A or B. Default:
#                      '{v4j} bench --runs 1 --warmup 1 --bufs 2000000' (driver and device pinned to CPUs 0 and 1)
#   --figure LABEL     the run's figure: the first number on the first line of its stdout that contains LABEL
#                      (commas dropped; default "buffers/s", bench's headline, its mean: use --runs 1)
#   --pairs N          pairs (default 10)
#   --cpus "X Y"       the probe's two CPUs (default "0 1", the bench's driver and device CPUs)
#   --timeout S        longest a run may take (default 600)
#   --wait-idle PCT    before each run, wait until the machine is at most PCT % busy (1 s samples) for up to
#                      --wait-idle-timeout seconds (default 120; then run anyway)
#   --out FILE         also append the BUILD/RUN/PAIR/SUMMARY lines to FILE
#   --cache DIR        build cache (default $PEERS_CACHE/ab-builds)
#   --build-only       build (or find) both jars, print the BUILD lines, run nothing
#   --dpdk             instead of --cmd: peers/bench-dpdk-vhost.sh with backend A = `serve net` from jar A and
#                      backend B = from jar B (DPDK virtio-user txonly into each, A B per rep, its own probes and
#                      RUN/SUMMARY/BACKEND lines), then per frame size a "SUMMARY figure=pps_SIZE" of its RUN lines'
#                      pps. Everything after -- goes to bench-dpdk-vhost.sh (e.g. --reps 5 --duration 2 --sizes 64,
#                      or --persistent --reps 40 --restart-every 4: both back-ends kept running across reps; then the
#                      result, printed last, is its "SUMMARY size=S jvm=means" lines, not a pooled figure=pps_SIZE).
#                      Its exit status is ours, after its lines were copied to --out.
#   --serve-args "..." with --dpdk: serve net's arguments besides --socket (default "--mode rxonly")
#
# Examples:
#   peers/ab-builds.sh --a main --pairs 20 --cmd '{v4j} bench --runs 1 --warmup 1 --bufs 1000000 --notify poll --batch 1'
#   peers/ab-builds.sh --a main --dpdk -- --reps 5 --duration 3 --sizes "64 1500"
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
ROOT=$(cd "$PEERS_DIR/.." && pwd)

rev_a='' rev_b='' cmd='{v4j} bench --runs 1 --warmup 1 --bufs 2000000' label='buffers/s' pairs=10 cpus='0 1'
run_timeout=600 idle_pct='' idle_timeout=120 out='' cache="$PEERS_CACHE/ab-builds" build_only=0 dpdk=0
serve_args='--mode rxonly' dpdk_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --a) rev_a=$2; shift 2 ;;
    --b) rev_b=$2; shift 2 ;;
    --cmd) cmd=$2; shift 2 ;;
    --figure) label=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --timeout) run_timeout=$2; shift 2 ;;
    --wait-idle) idle_pct=$2; shift 2 ;;
    --wait-idle-timeout) idle_timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --dpdk) dpdk=1; shift ;;
    --serve-args) serve_args=$2; shift 2 ;;
    --) shift; dpdk_args=("$@"); break ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$rev_a" ] || { peers_log "--a REV is required"; usage; }
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || peers_die "--pairs takes a positive whole number, got '$pairs'"
[[ "$run_timeout" =~ ^[1-9][0-9]*$ ]] || peers_die "--timeout takes a positive whole number of seconds, got '$run_timeout'"
[ -z "$idle_pct" ] || [[ "$idle_pct" =~ ^[0-9]+$ ]] || peers_die "--wait-idle takes a whole percentage, got '$idle_pct'"
read -r cpu_x cpu_y <<<"$cpus"
[[ "${cpu_x:-}" =~ ^[0-9]+$ && "${cpu_y:-}" =~ ^[0-9]+$ ]] || peers_die "--cpus takes two CPU numbers, got '$cpus'"
[ "$dpdk" = 1 ] || [ ${#dpdk_args[@]} = 0 ] || peers_die "arguments after -- are for --dpdk only"
[ "$dpdk" = 1 ] || [[ "$cmd" == *"{v4j}"* || "$cmd" == *"{jar}"* ]] ||
  peers_die "--cmd must run the side's build: use {v4j} (or {jar}) in it"
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || peers_die "$ROOT is not a git checkout"
command -v flock >/dev/null || peers_die "flock (util-linux) is needed to share the build cache"

work=$(mktemp -d /tmp/v4j-ab.XXXXXX)
peers_on_exit_rm "$work"
emit() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }
mkdir -p "$cache"

# ------------------------------------------------------------------------------------------------ builds
# The launcher running JAR: ./virtio4j of this checkout (it finds the JDK), told to run that jar instead of its own.
launcher() { printf 'env VIRTIO4J_JAR=%q %q' "$1" "$ROOT/virtio4j"; }

# copy_build SRC DIR: SRC's CLI jar and its lib/ into cache entry DIR, whole or not at all (a rename).
copy_build() {
  local src=$1 dir=$2 tmp
  tmp=$(mktemp -d "$dir.tmp.XXXXXX")
  cp "$src/cli/target/virtio4j.jar" "$tmp/" && cp -r "$src/cli/target/lib" "$tmp/lib" && mv -T "$tmp" "$dir" ||
    { rm -rf "$tmp"; peers_die "could not copy the build of $src into $dir"; }
}

# mvn_package DIR: the CLI and what it needs, in checkout DIR, offline, tests skipped; ./virtio4j build brings
# the JDK and Maven options (-f: DIR's own pom, whichever checkout runs it).
mvn_package() {
  "$ROOT/virtio4j" build -o -q -f "$1/pom.xml" -pl cli -am >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; peers_die "mvn package of $1 failed (log above)"; }
}

# build_rev SIDE REV: sets JAR to REV's build, building it first unless the cache has it, and prints its BUILD
# line. An empty REV is the work tree: its key is HEAD when it is clean, else HEAD plus a hash of its changes
# (tracked and untracked), and it is built in place.
build_rev() {
  local side=$1 rev=$2 key commit dir src t0 how lock
  if [ -z "$rev" ]; then
    commit=$(git -C "$ROOT" rev-parse HEAD)
    if [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=all)" ]; then
      key=$commit
    else
      key="worktree-${commit:0:12}-$( { git -C "$ROOT" diff HEAD --binary
        git -C "$ROOT" ls-files -z --others --exclude-standard | (cd "$ROOT" && xargs -0 -r sha1sum); } | sha1sum | cut -c1-12)"
    fi
  else
    commit=$(git -C "$ROOT" rev-parse --verify --quiet "$rev^{commit}") || peers_die "side $side: no commit '$rev' in $ROOT"
    key=$commit
  fi
  dir="$cache/$key"
  exec {lock}>"$cache/$key.lock"
  flock "$lock"   # one build per key, whoever asks; the others wait and find it built
  t0=$(peers_now)
  if [ -f "$dir/virtio4j.jar" ]; then
    how=cached
  elif [ -z "$rev" ]; then
    peers_log "side $side: building the work tree ($key)"
    mvn_package "$ROOT"
    copy_build "$ROOT" "$dir"
    how="built_s=$(peers_elapsed "$t0")"
  else
    src=$(mktemp -d "$cache/src-$key.XXXXXX")
    peers_on_exit_rm "$src"
    git -C "$ROOT" archive --format=tar "$commit" | tar -x -C "$src" || peers_die "git archive of $commit failed"
    peers_log "side $side: building $rev ($commit) in $src"
    mvn_package "$src"
    copy_build "$src" "$dir"
    rm -rf "$src"
    how="built_s=$(peers_elapsed "$t0")"
  fi
  exec {lock}>&-
  emit "BUILD side=$side rev=${rev:-worktree} commit=$commit key=$key jar=$dir/virtio4j.jar $how"
  JAR=$dir/virtio4j.jar
}

build_rev A "$rev_a"
jar_a=$JAR
build_rev B "$rev_b"
jar_b=$JAR
if [ "$build_only" = 1 ]; then
  exit 0
fi

# The statistics: `virtio4j paired` of whichever side has it, else this checkout's (built if it is stale).
has_paired() { VIRTIO4J_JAR=$1 "$ROOT/virtio4j" paired --a 1 --b 1 >/dev/null 2>&1; }
if has_paired "$jar_b"; then stats=(env "VIRTIO4J_JAR=$jar_b" "$ROOT/virtio4j")
elif has_paired "$jar_a"; then stats=(env "VIRTIO4J_JAR=$jar_a" "$ROOT/virtio4j")
else
  stats=("$ROOT/virtio4j")
  # now, not after the measurement: the launcher builds this checkout first if its build is stale
  "${stats[@]}" paired --a 1 --b 1 >/dev/null || peers_die "neither side's jar nor $ROOT/virtio4j has 'paired'"
fi
joined() { local IFS=,; echo "$*"; }
summary() {   # summary FIGURE_NAME A_VALUES_CSV B_VALUES_CSV
  local line
  line=$("${stats[@]}" paired --figure "$1" --a "$2" --b "$3") || peers_die "virtio4j paired failed on $1: A=$2 B=$3"
  emit "$line"
}

# --------------------------------------------------------------------------------------------- --dpdk mode
if [ "$dpdk" = 1 ]; then
  res="$work/dpdk.out"
  rc=0
  "$PEERS_DIR/bench-dpdk-vhost.sh" \
    --backend-a "$(launcher "$jar_a") serve net --socket {sock} $serve_args" \
    --backend-b "$(launcher "$jar_b") serve net --socket {sock} $serve_args" \
    "${dpdk_args[@]}" | tee "$res" || rc=$?
  [ -z "$out" ] || grep -E '^(RUN|SUMMARY|BACKEND) ' "$res" >>"$out" || true
  # Its status is ours (the header says so): peers_die would turn every failure into 1.
  if [ "$rc" != 0 ]; then peers_log "ERROR: bench-dpdk-vhost.sh failed (status $rc): no result"; exit "$rc"; fi
  persistent=0
  for arg in "${dpdk_args[@]}"; do [ "$arg" != --persistent ] || persistent=1; done
  if [ "$persistent" = 1 ]; then
    # Kept back-ends: reps of one JVM pair share its luck, so pooling every rep (what figure=pps_SIZE does) gives an
    # interval too narrow; bench-dpdk-vhost.sh's jvm=means is the figure, repeated here as the result.
    # (on stdout only: --out has it already)
    grep -E '^SUMMARY size=[0-9]+ jvm=means ' "$res" ||
      peers_log "no jvm=means line (one JVM pair): no result that covers per-JVM luck"
    exit 0
  fi
  for size in $(awk '/^RUN / { for (i = 2; i <= NF; i++) if ($i ~ /^size=/) { sub(/^size=/, "", $i); print $i } }' "$res" | sort -un); do
    a=() b=()
    while read -r side pps; do
      if [ "$side" = A ]; then a+=("$pps"); else b+=("$pps"); fi
    done < <(grep -E "^RUN size=$size " "$res" | while read -r line; do
      echo "$(peers_field backend "$line") $(peers_field pps "$line")"; done)
    summary "pps_$size" "$(joined "${a[@]}")" "$(joined "${b[@]}")"
  done
  exit 0
fi

# ------------------------------------------------------------------------------------------ command mode
peers_probe_build
RUN_PGID=
stop_run() { [ -z "$RUN_PGID" ] || kill -KILL -- "-$RUN_PGID" 2>/dev/null || true; }
peers_on_exit_call stop_run

# run_one SIDE PAIR: runs the template for SIDE; sets FIG and PROBE.
run_one() {
  local side=$1 pair=$2 jar c b p0 p1 t0 secs rc=0 log
  jar=$jar_a
  [ "$side" = B ] && jar=$jar_b
  c=${cmd//\{v4j\}/$(launcher "$jar")}
  c=${c//\{jar\}/$jar}
  c=${c//\{side\}/$side}
  log="$work/run-$pair-$side"
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(peers_probe "$cpu_x" "$cpu_y")
  t0=$(peers_now)
  # its own process group (timeout's), so that a timeout or our exit ends all of it
  setsid timeout --kill-after=10 "$run_timeout" bash -c "exec $c" </dev/null >"$log.out" 2>"$log.err" &
  RUN_PGID=$!
  wait "$RUN_PGID" || rc=$?
  kill -KILL -- "-$RUN_PGID" 2>/dev/null || true   # whatever it left running (none, normally)
  RUN_PGID=
  secs=$(peers_elapsed "$t0")
  p1=$(peers_probe "$cpu_x" "$cpu_y")
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log.err" >&2
    [ "$rc" != 124 ] || peers_log "it ran longer than --timeout $run_timeout s"
    peers_die "pair $pair side $side: the command failed (status $rc): $c"
  fi
  FIG=$(grep -F -m 1 -- "$label" "$log.out" | grep -oE '[0-9][0-9,]*(\.[0-9]+)?([eE][-+]?[0-9]+)?' | head -n 1 | tr -d ,) || true
  if [ -z "$FIG" ]; then
    tail -n 20 "$log.out" >&2
    peers_die "pair $pair side $side: no line with '$label' and a number in the command's output (above)"
  fi
  PROBE="$p0/$p1"
  emit "RUN pair=$pair side=$side figure=$FIG seconds=$secs busy_before=${b}% probe_ns=$PROBE"
  [ "$p0" = na ] || echo "$p0" >>"$work/probe-$side"
}

peers_log "A: ${rev_a} -> $jar_a"
peers_log "B: ${rev_b:-work tree} -> $jar_b"
peers_log "$pairs pairs A B B A ..., command: $cmd, figure: first number on the line with '$label'"
fa=() fb=()
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  declare -A fig=() probe=()
  for side in $order; do
    run_one "$side" "$pair"
    fig[$side]=$FIG
    probe[$side]=$PROBE
  done
  fa+=("${fig[A]}")
  fb+=("${fig[B]}")
  emit "PAIR pair=$pair order=${order/ /} A=${fig[A]} B=${fig[B]} ratio_B_over_A=$(awk -v a="${fig[A]}" -v b="${fig[B]}" 'BEGIN { printf "%.4f", (a > 0 ? b / a : 0) }') probe_ns_A=${probe[A]} probe_ns_B=${probe[B]}"
  unset fig probe
done
figure_name=${label//[[:space:]]/_}
summary "$figure_name" "$(joined "${fa[@]}")" "$(joined "${fb[@]}")"
if [ -s "$work/probe-A" ] && [ -s "$work/probe-B" ] && [ "$(wc -l <"$work/probe-A")" = "$(wc -l <"$work/probe-B")" ]; then
  summary probe_ns "$(paste -sd, "$work/probe-A")" "$(paste -sd, "$work/probe-B")"
fi
