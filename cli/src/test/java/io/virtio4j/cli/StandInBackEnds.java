package io.virtio4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Stand-ins for {@code peers/bench-dpdk-vhost.sh}'s back-ends and driver, so that its tests of order and error paths
 * start neither DPDK nor a JVM, and the check that none of a stand-in's processes outlived the bench.
 */
final class StandInBackEnds {
    private StandInBackEnds() {
    }

    /**
     * The back-end: records "ROOT CHILD" PIDs in $2, creates the socket $1 and waits for SIGTERM, on which it exits
     * without its child, which runs in a session of its own as testpmd-vhost.sh's testpmd does (what a wrapper killed
     * after the grace period leaves). "die" as $3: it is SIGKILLed once the harness stopped it (SIGSTOP) by a process
     * outside its tree (the harness does not stop that one; a fixed delay instead let a loaded machine kill it before
     * the harness first saw its tree, whose child then outlived the bench); "slow": its socket comes after 1.5 s; "metrics METRICS MARKS": it becomes
     * {@link #METRICS} on the unix socket METRICS (until SIGTERM, its default action). It prints no RESULT line.
     */
    private static final String BACKEND = """
            #!/usr/bin/env bash
            setsid sleep 600 </dev/null >/dev/null 2>&1 &
            echo "$$ $!" >>"$2"
            [ "${3:-}" != die ] || (setsid bash -c "until grep -q 'T (stopped)' /proc/$$/status; do sleep 0.05; done; kill -KILL $$" </dev/null >/dev/null 2>&1 &)
            [ "${3:-}" != slow ] || sleep 1.5
            python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
            [ "${3:-}" != metrics ] || exec python3 "$(dirname "$0")/stand-in-metrics.py" "$4" "$1.rx" "$5"
            trap 'exit 0' TERM
            while :; do sleep 0.1; done
            """;

    /**
     * The "metrics" back-end's endpoint (python3 METRICS COUNTER MARKS): answers each request with one
     * {@code virtio4j_good_packets_total{direction="rx"}} sample, the frames the stand-in driver wrote into COUNTER
     * (the back-end's vhost-user socket path + ".rx") plus $STAND_IN_METRICS_OFFSET (a back-end that has counted
     * for a while), after appending "scrape " and the request's target to MARKS.
     */
    private static final String METRICS = """
            import os, socket, sys
            path, counter, marks = sys.argv[1:4]
            offset = int(os.environ.get("STAND_IN_METRICS_OFFSET", "0"))
            server = socket.socket(socket.AF_UNIX)
            server.bind(path)
            server.listen(16)
            while True:
                c, _ = server.accept()
                try:
                    request = c.recv(65536).decode()
                    if not request:
                        continue
                    with open(marks, "a") as m:
                        m.write("scrape " + request.split(" ")[1] + "\\n")
                    try:
                        with open(counter) as f:
                            n = int(f.read())
                    except (FileNotFoundError, ValueError):
                        n = 0
                    body = ('virtio4j_good_packets_total{queue="0",direction="rx"} %d\\n' % (n + offset)).encode()
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(body) + body)
                except OSError:
                    pass
                finally:
                    c.close()
            """;

    /**
     * The driver (for {@code --driver}): called with testpmd-virtio-user.sh's options, {@code --socket PATH} first;
     * fails unless PATH is a socket, appends "drive" to the file %1$s and its PID to %1$s.pids, and adds the frames it
     * "sends" to the counter file PATH.rx that a "metrics" back-end reports. Without {@code --ready-file} it sends 1000
     * frames at once. With {@code --ready-file F} (bench-dpdk-vhost.sh --windows) it touches F and sends 1000 frames
     * every 50 ms until SIGUSR1 or --duration s. Its RESULT line says what it sent, plus $STAND_IN_DRIVER_EXTRA (a
     * miscount, to make the counts disagree).
     */
    private static final String DRIVER = """
            #!/usr/bin/env bash
            [ "$1" = --socket ] && [ -S "$2" ] || { echo "no socket in $*" >&2; exit 3; }
            sock=$2 duration=1 ready=''
            while [ $# -gt 1 ]; do
              case $1 in --duration) duration=$2 ;; --ready-file) ready=$2 ;; esac
              shift 2
            done
            echo drive >>'%1$s'
            echo $$ >>'%1$s.pids'
            stop=0
            trap 'stop=1' USR1
            n0=$(cat "$sock.rx" 2>/dev/null || echo 0) n=0 end=$((SECONDS + ${duration%%.*} + 1)) t0=$SECONDS
            count() { echo $((n0 + n)) >"$sock.rx.tmp"; mv "$sock.rx.tmp" "$sock.rx"; }
            if [ -z "$ready" ]; then
              n=1000
              count
            else
              touch "$ready"
              while [ "$stop" = 0 ] && [ "$SECONDS" -lt "$end" ]; do
                n=$((n + 1000))
                count
                sleep 0.05 &
                wait $! || true
              done
            fi
            echo "RESULT role=virtio-user window_s=$((SECONDS - t0)).00 TX-packets=$((n + ${STAND_IN_DRIVER_EXTRA:-0})) RX-packets=0 TX-dropped=7 TX-pps=500 win-TX-packets=500 cpu=1.00"
            """;

    /** Writes the back-end into {@code dir}; returns its command line, to be followed by its arguments. */
    static String write(Path dir) throws IOException {
        Path p = dir.resolve("stand-in-backend.sh");
        Files.writeString(p, BACKEND);
        Files.writeString(dir.resolve("stand-in-metrics.py"), METRICS);
        return "bash " + p;
    }

    /** Writes the driver into {@code dir}, marking each run in {@code marks}; returns its path (for --driver). */
    static Path writeDriver(Path dir, Path marks) throws IOException {
        Path p = dir.resolve("stand-in-driver.sh");
        Files.writeString(p, DRIVER.formatted(marks));
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
        return p;
    }

    /**
     * Every PID that {@code started} stand-ins recorded in {@code pids} (roots and their children) is gone, within 5 s
     * ({@link #allGone}).
     */
    static void noneLeft(Path pids, int started, String output) throws IOException, InterruptedException {
        List<Long> all = Arrays.stream(Files.readString(pids).trim().split("\\s+")).map(Long::parseLong).toList();
        assertEquals(2 * started, all.size(), started + " stand-ins, each with its child, were started:\n" + output);
        allGone(all, output);
    }

    /**
     * Every process in {@code pids} is gone within 5 s (a killed process may stay a zombie for a moment, until its new
     * parent reaps it: that one runs no more).
     */
    static void allGone(List<Long> pids, String output) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        for (long pid : pids) {
            while (running(pid)) {
                if (System.nanoTime() > deadline) {
                    fail("pid " + pid + " is still there, state " + state(pid) + ", after the bench exited:\n" + output);
                }
                Thread.sleep(50);
            }
        }
    }

    private static String state(long pid) throws IOException {
        try {
            String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return s.substring(s.lastIndexOf(") ") + 2).split(" ")[0];
        } catch (NoSuchFileException e) {
            return "gone";
        }
    }

    private static boolean running(long pid) throws IOException {
        String s = state(pid);
        return !s.equals("gone") && !s.equals("Z") && !s.equals("X");
    }
}
