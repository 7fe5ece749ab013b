package io.virtio4j.cli;

import io.virtio4j.bench.Json;
import io.virtio4j.bench.LatencyHistogram;
import io.virtio4j.core.error.InvalidUsedIdException;
import io.virtio4j.core.error.UsedLengthTooLargeException;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.driver.BadCompletionException;
import io.virtio4j.devices.blk.driver.BlkDriver;
import io.virtio4j.os.LinuxException;
import io.virtio4j.vhost.frontend.BackendTimeoutException;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.NegotiationFailedException;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code virtio4j drive blk}: a virtio-blk front-end and guest driver over vhost-user that loads a block device the
 * way fio does ({@code --rw --bs --iodepth --size --rwmixread}; fio's {@code --runtime} is {@code --duration}, as in every
 * command; the same summary: IOPS, bandwidth and completion-latency percentiles per direction), one thread per queue, and with {@code --verify} checks every block it
 * reads against what it wrote ({@link BlockPattern}). Prints one {@code RESULT} line; exits non-zero on any request
 * that did not complete OK, on any block that did not verify, and on any request lost or completed twice.
 *
 * <p>With {@code --reconnect} it rides out back-ends that go away (stopped, crashed, {@code kill -9}): the control
 * thread sees the connection close, holds the queues' threads, connects again when a back-end listens on the socket
 * again (the session resubmits the requests in flight) and lets them go on; the summary counts the reconnects. SIGINT
 * and SIGTERM end the load as fio's Ctrl-C does: requests in flight drain, the summary is printed.
 */
@Command(name = "blk", mixinStandardHelpOptions = true, sortOptions = false,
        description = "A virtio-blk front-end and guest driver over vhost-user, with fio's vocabulary.",
        footer = {"", "Example: virtio4j drive blk --socket /tmp/blk.sock --rw randread --duration 10"})
final class DriveBlk implements Callable<Integer> {
    /** Exit status when a request completed with a status other than OK (IOERR, UNSUPP). */
    static final int EXIT_IO_ERROR = 1;
    /** Exit status when every request completed OK but a block read back was not what was written. */
    static final int EXIT_VERIFY_ERROR = 3;
    /**
     * Exit status when requests were lost (issued and never completed: the back-end went away and did not come back
     * within --reconnect-timeout, or without --reconnect) or completed twice (a used id naming no request in flight).
     */
    static final int EXIT_LOST = 4;
    /** How often the control thread looks for a closed connection when it has nothing else to do. */
    private static final long WATCH_NANOS = 20_000_000L;
    /** With --verify, one 4-byte generation per block: the region is capped at 64 MiB of them (64 GiB of 4k blocks). */
    static final long MAX_VERIFY_BLOCKS = 1L << 24;
    /** The driver's largest request slot ({@link BlkDriver.Config}). */
    static final long MAX_BS = 1L << 30;

    enum Rw {
        READ, WRITE, RANDREAD, RANDWRITE, RANDRW;

        boolean random() {
            return this == RANDREAD || this == RANDWRITE || this == RANDRW;
        }

        boolean writes() {
            return this == WRITE || this == RANDWRITE || this == RANDRW;
        }
    }

    @Spec
    CommandSpec spec;
    @Option(names = {"--socket", "--socket-path"}, required = true, paramLabel = "PATH", description = "the back-end's vhost-user socket")
    Path socket;
    @Option(names = "--rw", paramLabel = "read|write|randread|randwrite|randrw", description = "the workload (default read)",
            converter = RwConverter.class)
    Rw rw = Rw.READ;
    @Option(names = "--rwmixread", paramLabel = "PCT", description = "randrw: percentage of reads (default ${DEFAULT-VALUE})")
    int rwmixread = 50;
    @Option(names = "--bs", paramLabel = "SIZE", description = "bytes per request, a multiple of 512: 4k, 128k... (default 4k)",
            converter = SizeConverter.class)
    long bs = 4096;
    @Option(names = "--iodepth", paramLabel = "N", description = "requests in flight per queue (default ${DEFAULT-VALUE})")
    int iodepth = 32;
    @Option(names = "--queues", paramLabel = "N", description = "request queues, one thread each (default ${DEFAULT-VALUE})")
    int queues = 1;
    @Option(names = "--queue-size", paramLabel = "N", description = "entries per ring (default ${DEFAULT-VALUE})")
    int queueSize = 256;
    @Option(names = "--ring", paramLabel = "split|packed", description = "ring format (default split)",
            converter = Converters.RingFormatConverter.class)
    RingFormat ring = RingFormat.SPLIT;
    @Option(names = "--indirect", arity = "1", paramLabel = "on|off", description = "use VIRTIO_F_INDIRECT_DESC when the "
            + "back-end offers it (default on)", converter = Converters.OnOffConverter.class)
    boolean indirect = true;
    @Option(names = "--event-idx", arity = "1", paramLabel = "on|off", description = "use VIRTIO_F_EVENT_IDX when the "
            + "back-end offers it (default on)", converter = Converters.OnOffConverter.class)
    boolean eventIdx = true;
    @Option(names = "--duration", paramLabel = "S", description = "run for S seconds (default: one pass over --size, "
            + "or 10 s when --size is not given either)")
    Double duration;

    /**
     * fio's name for {@link #duration}, hidden: this command speaks fio, and the runs recorded under peers/results/
     * were made with it.
     */
    @Option(names = "--runtime", hidden = true, paramLabel = "S")
    void runtime(double seconds) {
        duration = seconds;
    }
    @Option(names = "--size", paramLabel = "SIZE", description = "the region used, from offset 0 (default: the whole "
            + "device); without --duration, as many requests as it holds blocks of --bs", converter = SizeConverter.class)
    Long size;
    @Option(names = "--verify", description = "write a checked pattern and check every block read: write, randwrite: "
            + "write, then read back every block written; randrw: reads check the last write of their block, and every block written is read back at the end; read, randread: check blocks an "
            + "earlier --verify run wrote")
    boolean verify;
    @Option(names = "--json", paramLabel = "FILE", description = "also write the results to FILE as JSON")
    Path json;
    @Option(names = "--connect-timeout", paramLabel = "S", description = "wait this long for the socket, and for each of the back-end's "
            + "replies (default ${DEFAULT-VALUE})")
    int connectTimeout = 30;
    @Option(names = "--stall-timeout", paramLabel = "S", description = "fail when requests are in flight and none "
            + "completes for S seconds (default ${DEFAULT-VALUE})")
    double stallTimeout = 30;
    @Option(names = "--reconnect", description = "when the back-end goes away (its connection closes: it stopped, crashed, "
            + "was killed), wait for one to listen on --socket again, connect, and go on with the job: requests in flight "
            + "are resubmitted (from the back-end's inflight area when it offers INFLIGHT_SHMFD, else offered again by "
            + "the driver). Without it, the job ends there and its requests in flight are lost")
    boolean reconnect;
    @Option(names = "--inflight", arity = "1", paramLabel = "on|off", description = "let the back-end track the requests "
            + "it takes in an inflight area (INFLIGHT_SHMFD) when it offers one, which it resubmits after a reconnect "
            + "(default on); off: the driver offers again what was in flight", converter = Converters.OnOffConverter.class)
    boolean inflight = true;
    @Option(names = "--reconnect-timeout", paramLabel = "S", description = "--reconnect: give up when no back-end is "
            + "back within S seconds (default ${DEFAULT-VALUE}); the requests in flight are then lost")
    int reconnectTimeout = 30;

    @Override
    public Integer call() throws Exception {
        validate();
        // all at once: each with* checks the whole, and a packed size or a small ring is valid only with its partners
        BlkDriver.Config config = new BlkDriver.Config(queues, queueSize, iodepth, (int) bs, ring, eventIdx, indirect,
                BlkDriver.Config.defaults().eventFds());
        BlkDriver connected;
        try {
            connected = connect(config);
        } catch (NegotiationFailedException e) {
            // SIZE_MAX and SEG_MAX too small for --bs, or fewer queues than --queues
            throw bad("--bs " + bs + ", --queues " + queues + ": the back-end cannot take them: " + e.getMessage());
        }
        try (BlkDriver driver = connected) {
            return run(driver);
        }
    }

    /**
     * Connects within --connect-timeout; with --reconnect, a back-end that goes away during the set-up is waited for
     * too, as a later loss would be.
     */
    private BlkDriver connect(BlkDriver.Config config) throws InterruptedException {
        long giveUp = System.nanoTime() + connectTimeout * 1_000_000_000L;
        while (true) {
            long left = Math.max(giveUp - System.nanoTime(), 1_000_000L);
            try {
                FrontendSession session = FrontendSession.connect(socket, Duration.ofNanos(left));
                session.useInflight(inflight);
                return BlkDriver.start(session, config); // which closes the session if it fails
            } catch (LinuxException | VhostUserRequestFailedException | BackendTimeoutException e) {
                if (!reconnect || System.nanoTime() - giveUp >= 0) {
                    throw e;
                }
                Thread.sleep(WATCH_NANOS / 1_000_000L);
            }
        }
    }

    /** Everything that can be checked before connecting, each error naming its flag and value. */
    private void validate() {
        if (bs < BlkLayout.SECTOR || bs % BlkLayout.SECTOR != 0) {
            throw bad("--bs: " + bs + " is not a positive multiple of " + BlkLayout.SECTOR + " bytes");
        }
        if (bs > MAX_BS) {
            throw bad("--bs: " + bs + " is above the driver's largest request, " + MAX_BS + " bytes");
        }
        if (rwmixread < 0 || rwmixread > 100) {
            throw bad("--rwmixread: " + rwmixread + " is not in [0, 100]");
        }
        if (iodepth < 1 || iodepth > 65536) {
            throw bad("--iodepth: " + iodepth + " is not in [1, 65536]");
        }
        if (queues < 1 || queues > 256) {
            throw bad("--queues: " + queues + " is not in [1, 256]");
        }
        if (!ring.isValidQueueSize(queueSize)) {
            throw bad("--queue-size: " + queueSize + " is not a valid " + ring.name().toLowerCase(Locale.ROOT) + " queue size");
        }
        if (iodepth > queueSize) {
            throw bad("--iodepth: " + iodepth + " is more than --queue-size " + queueSize + " entries");
        }
        if (connectTimeout < 1) {
            // the session's patience bounds every reply too: a wait of 0 would refuse the first answer
            throw bad("--connect-timeout: " + connectTimeout + " is not a positive number of seconds");
        }
        if (duration != null && !(duration > 0 && duration <= 1e6)) {
            throw bad("--duration: " + duration + " is not in (0, 1000000] seconds");
        }
        if (reconnectTimeout < 1) {
            throw bad("--reconnect-timeout: " + reconnectTimeout + " is not a positive number of seconds");
        }
        if (!(stallTimeout > 0 && stallTimeout <= 1e6)) {
            throw bad("--stall-timeout: " + stallTimeout + " is not in (0, 1000000] seconds");
        }
        if (size != null && size % bs != 0) {
            throw bad("--size: " + size + " is not a multiple of --bs " + bs);
        }
    }

    private ParameterException bad(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    private int run(BlkDriver driver) throws Exception {
        PrintStream err = System.err;
        long capacity = driver.capacityBytes();
        long region = size != null ? size : capacity - capacity % bs;
        if (region > capacity) {
            throw bad("--size: " + region + " is beyond the device's capacity of " + capacity + " bytes");
        }
        long blocks = region / bs;
        if (blocks < queues) {
            throw bad("--size: " + region + " bytes hold " + blocks + " blocks of --bs " + bs + ", fewer than --queues " + queues);
        }
        if (verify && blocks > MAX_VERIFY_BLOCKS) {
            throw bad("--size: --verify keeps a generation per block; " + blocks + " blocks of " + bs
                    + " bytes are more than " + MAX_VERIFY_BLOCKS + ": give a smaller --size");
        }
        if (rw.writes() && driver.readOnly()) {
            err.println("drive blk: the device is read-only (VIRTIO_BLK_F_RO): --rw " + name(rw) + " writes");
            return EXIT_IO_ERROR;
        }
        // without indirect descriptors the driver cuts the depth to what the ring holds
        int depth = driver.depth(0);
        boolean timed = duration != null || size == null;
        long runNanos = timed ? (long) ((duration != null ? duration : 10.0) * 1e9) : Long.MAX_VALUE;
        long runId = ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE;
        Job[] jobs = new Job[queues];
        for (int q = 0; q < queues; q++) {
            long first = blocks * q / queues;
            long last = blocks * (q + 1) / queues;
            jobs[q] = new Job(driver, q, depth, (int) bs, rw, rwmixread, first, last - first, verify, runId, timed,
                    (long) (stallTimeout * 1e9), err);
        }
        err.printf(Locale.ROOT, "drive blk: %s, bs=%d, iodepth=%d, queues=%d, region=%d bytes of %d, %s%s%n", name(rw), bs,
                depth, queues, region, capacity, timed ? String.format(Locale.ROOT, "%.1f s", runNanos / 1e9) : "one pass",
                verify ? ", verify" : "");
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpu0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        long deadline = timed ? t0 + runNanos : Long.MAX_VALUE;
        Thread[] threads = new Thread[queues];
        for (int q = 0; q < queues; q++) {
            jobs[q].deadline = deadline;
        }
        // fio's Ctrl-C: SIGINT or SIGTERM ends the load (requests in flight drain, a --verify read-back still runs),
        // the summary is printed, and the process exits with the run's status rather than the signal's. The JVM runs
        // the hook on the signal and halts when it returns, so the hook waits for the report and halts with it.
        Stop stop = new Stop(jobs, err);
        Thread hook = new Thread(stop, "drive-blk-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (int q = 0; q < queues; q++) {
                threads[q] = Thread.ofPlatform().name("drive-blk-q" + q).start(jobs[q]);
            }
            Supervisor watch = new Supervisor(driver, jobs, threads, err);
            watch.run(t0);
            long t1 = System.nanoTime();
            long cpu = os.getProcessCpuTime() - cpu0;
            int stalled = 0;
            for (Job j : jobs) {
                if (j.failure instanceof RequestsStalledException e) {
                    err.println("drive blk: " + e.getMessage());
                    stalled++;
                } else if (Job.isDuplicate(j.failure)) {
                    // counted as duplicated: the queue ended there and its requests in flight are lost
                    err.println("drive blk: queue " + j.q + ": a completion of no request in flight or of another "
                            + "request (completed twice?): " + j.failure.getMessage());
                } else if (j.failure != null) {
                    throw j.failure;
                }
            }
            int status = report(driver, jobs, watch.reconnects, t1 - t0, cpu, err);
            stop.status = stalled > 0 ? EXIT_IO_ERROR : status;
            return stop.status;
        } finally {
            stop.reported.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // a signal came as the run ended: the hook is running and exits with stop.status
            }
        }
    }

    /** The shutdown hook: stops the load on SIGINT or SIGTERM, then exits with the run's status once it is reported. */
    private static final class Stop implements Runnable {
        final Job[] jobs;
        final PrintStream err;
        final CountDownLatch reported = new CountDownLatch(1);
        /** What the process exits with: 2 (an error) unless the run got to its report. */
        volatile int status = 2;

        Stop(Job[] jobs, PrintStream err) {
            this.jobs = jobs;
            this.err = err;
        }

        @Override
        public void run() {
            if (reported.getCount() > 0) {
                err.println("drive blk: stopping on a signal: draining the requests in flight");
                long now = System.nanoTime();
                for (Job j : jobs) {
                    // stopped first: the job reads it after it lifts the deadline for its read-back (Job.run)
                    j.stopped = true;
                    j.deadline = Math.min(j.deadline, now);
                }
            }
            try {
                reported.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            System.out.flush();
            err.flush();
            Runtime.getRuntime().halt(status);
        }
    }

    /**
     * The control thread's part while the queues' threads run: once a second, the progress line; in between, it
     * watches the vhost-user connection, the only sign that the back-end went away (a back-end killed with requests
     * in flight just stops completing them). Then, with --reconnect, it holds every queue's thread at a point where
     * it touches no ring, reconnects (the session resubmits what was in flight) and lets them go on; without, or
     * when no back-end came back within --reconnect-timeout, it tells them to give up: their requests in flight are
     * lost. The session is used by this thread only.
     */
    private final class Supervisor {
        final BlkDriver driver;
        final Job[] jobs;
        final Thread[] threads;
        final PrintStream err;
        int reconnects;

        Supervisor(BlkDriver driver, Job[] jobs, Thread[] threads, PrintStream err) {
            this.driver = driver;
            this.jobs = jobs;
            this.threads = threads;
            this.err = err;
        }

        void run(long t0) throws InterruptedException {
            Progress bar = new Progress(err);
            boolean terminal = System.console() != null && System.console().isTerminal();
            long lastReads = 0;
            long lastWrites = 0;
            long lastReadBytes = 0;
            long lastWriteBytes = 0;
            long last = t0;
            while (anyAlive()) {
                FrontendSession session = driver.session();
                if (!session.connected()) {
                    Thread.sleep(WATCH_NANOS / 1_000_000L); // given up on the back-end: the jobs are ending
                } else if (session.frontend().awaitHangup(WATCH_NANOS) && anyAlive()) {
                    backEndGone();
                }
                long now = System.nanoTime();
                if (now - last < 1_000_000_000L || !anyAlive()) {
                    continue;
                }
                long reads = 0;
                long writes = 0;
                long readBytes = 0;
                long writeBytes = 0;
                for (Job j : jobs) {
                    reads += j.readsDone();
                    writes += j.writesDone();
                    readBytes += j.readBytesDone();
                    writeBytes += j.writeBytesDone();
                }
                double s = (now - last) / 1e9;
                String line = String.format(Locale.ROOT, "[%.0fs] r=%.1fk IOPS %.1f MiB/s, w=%.1fk IOPS %.1f MiB/s",
                        (now - t0) / 1e9, (reads - lastReads) / s / 1e3, (readBytes - lastReadBytes) / s / 1048576.0,
                        (writes - lastWrites) / s / 1e3, (writeBytes - lastWriteBytes) / s / 1048576.0);
                if (terminal) {
                    bar.show(line);
                } else {
                    err.println("drive blk: " + line);
                }
                lastReads = reads;
                lastWrites = writes;
                lastReadBytes = readBytes;
                lastWriteBytes = writeBytes;
                last = now;
            }
            bar.clear();
        }

        private boolean anyAlive() {
            for (Thread t : threads) {
                if (t.isAlive()) {
                    return true;
                }
            }
            return false;
        }

        /** The connection closed while queues run: reconnect (--reconnect) or give the requests in flight up. */
        private void backEndGone() throws InterruptedException {
            long t0 = System.nanoTime();
            for (Job j : jobs) {
                j.control = Job.HOLD;
            }
            // each thread holds within a millisecond (its longest wait), or has ended
            for (int q = 0; q < jobs.length; q++) {
                while (!jobs[q].held && threads[q].isAlive()) {
                    Thread.sleep(0, 100_000);
                }
            }
            String why = reconnect ? comeBack(t0) : "the back-end closed the connection (--reconnect waits for it to come back)";
            int next = why == null ? Job.RUN : Job.ABANDON;
            if (why != null) {
                driver.session().disconnect();
                int inFlight = 0;
                for (Job j : jobs) {
                    inFlight += driver.inFlight(j.q);
                }
                err.println("drive blk: " + why + ": " + inFlight + " requests in flight are lost");
            }
            for (int q = 0; q < jobs.length; q++) {
                jobs[q].control = next;
                LockSupport.unpark(threads[q]);
            }
            // each thread has left its hold before the next one can be asked for: a hold flag still up from this one
            // would be taken for the next
            for (int q = 0; q < jobs.length; q++) {
                while (jobs[q].held && threads[q].isAlive()) {
                    Thread.sleep(0, 100_000);
                }
            }
        }

        /**
         * Reconnects until it works or --reconnect-timeout has passed since {@code t0}: a back-end may come back and
         * go again before the set-up is through (it fails then, and the next attempt waits for the next one). Null
         * when reconnected, else why not.
         */
        private String comeBack(long t0) throws InterruptedException {
            long giveUp = t0 + reconnectTimeout * 1_000_000_000L;
            int attempts = 0;
            RuntimeException last = null;
            while (true) {
                long left = giveUp - System.nanoTime();
                if (left <= 0) {
                    return "no back-end came back on " + socket + " within " + reconnectTimeout + " s (--reconnect-timeout; "
                            + attempts + " attempts, the last failed with: " + (last == null ? "-" : last.getMessage()) + ")";
                }
                attempts++;
                long tried = System.nanoTime();
                try {
                    driver.reconnect(Duration.ofNanos(left));
                    reconnects++;
                    err.printf(Locale.ROOT, "drive blk: reconnected (%d) after %.0f ms, %d attempt(s)%n", reconnects,
                            (System.nanoTime() - t0) / 1e6, attempts);
                    return null;
                } catch (LinuxException | VhostUserRequestFailedException | BackendTimeoutException e) {
                    // the new back-end went away mid-way, or none listens yet: try again while there is time
                    last = e;
                } catch (NegotiationFailedException | UnsupportedOperationException | VirtqueueException e) {
                    // a back-end that offers less than before, a ring that cannot resume, a ring the old back-end broke
                    return "cannot reconnect: " + e.getMessage();
                }
                if (System.nanoTime() - tried < WATCH_NANOS) {
                    Thread.sleep(WATCH_NANOS / 1_000_000L); // a failure that came at once must not spin
                }
            }
        }
    }

    private int report(BlkDriver driver, Job[] jobs, int reconnects, long elapsed, long cpuNanos, PrintStream err)
            throws Exception {
        LatencyHistogram reads = new LatencyHistogram();
        LatencyHistogram writes = new LatencyHistogram();
        long readBytes = 0;
        long writeBytes = 0;
        long ioErrors = 0;
        long verifyErrors = 0;
        long unchecked = 0;
        long lost = 0;
        long duplicated = 0;
        for (Job j : jobs) {
            lost += j.lost();
            duplicated += j.duplicated;
            reads.add(j.readLatency);
            writes.add(j.writeLatency);
            readBytes += j.readBytesDone();
            writeBytes += j.writeBytesDone();
            ioErrors += j.ioErrors;
            verifyErrors += j.verifyErrors;
            unchecked += j.uncheckedReads;
        }
        double seconds = elapsed / 1e9;
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("rw", name(rw));
        result.put("bs", bs);
        result.put("iodepth", jobs[0].depth);
        result.put("queues", queues);
        result.put("ring", ring.name().toLowerCase(Locale.ROOT));
        result.put("indirect", indirect);
        result.put("event_idx", eventIdx);
        result.put("runtime_s", seconds);
        result.put("verify", verify);
        PrintStream out = System.out;
        direction(out, result, "read", reads, readBytes, seconds);
        direction(out, result, "write", writes, writeBytes, seconds);
        double cpuSeconds = cpuNanos / 1e9;
        long requests = reads.count() + writes.count();
        out.printf(Locale.ROOT, "  cpu          : usr+sys=%.2fs (%.2f CPUs over %.2fs)%n", cpuSeconds, cpuSeconds / seconds, seconds);
        out.printf(Locale.ROOT, "  requests     : total=%d, io_errors=%d, verify_errors=%d%s%n", requests, ioErrors, verifyErrors,
                verify ? ", reads_of_unwritten_blocks=" + unchecked : "");
        out.printf(Locale.ROOT, "  back-end     : reconnects=%d, lost=%d, duplicated=%d, inflight area=%s%n", reconnects, lost,
                duplicated, driver.session().inflightArea() != null ? "yes" : "no");
        result.put("cpu_s", cpuSeconds);
        result.put("requests", requests);
        result.put("io_errors", ioErrors);
        result.put("verify_errors", verifyErrors);
        result.put("lost", lost);
        result.put("duplicated", duplicated);
        result.put("reconnects", reconnects);
        result.put("inflight", driver.session().inflightArea() != null);
        result.put("features", String.format(Locale.ROOT, "0x%x", driver.negotiatedFeatures()));
        StringBuilder line = new StringBuilder("RESULT role=virtio4j-blk-driver");
        for (Map.Entry<String, Object> e : result.entrySet()) {
            Object v = e.getValue();
            line.append(' ').append(e.getKey().replace('_', '-')).append('=')
                    .append(v instanceof Double d ? String.format(Locale.ROOT, "%.3f", d) : String.valueOf(v));
        }
        out.println(line);
        out.flush();
        if (json != null) {
            Files.writeString(json, Json.write(result));
        }
        if (ioErrors > 0) {
            err.println("drive blk: " + ioErrors + " requests completed with a status other than OK");
        }
        if (verifyErrors > 0) {
            err.println("drive blk: " + verifyErrors + " blocks read back were not what was written (verify)");
        }
        if (lost > 0 || duplicated > 0) {
            err.println("drive blk: " + lost + " requests lost (issued, never completed), " + duplicated
                    + " completions of no request in flight or of another request on its id (duplicated)");
        }
        return ioErrors > 0 ? EXIT_IO_ERROR : lost > 0 || duplicated > 0 ? EXIT_LOST : verifyErrors > 0 ? EXIT_VERIFY_ERROR : 0;
    }

    /** fio's summary of one direction, and its fields in {@code result} (nothing when it had no requests). */
    private static void direction(PrintStream out, Map<String, Object> result, String dir, LatencyHistogram h, long bytes,
                                  double seconds) {
        if (h.count() == 0) {
            return;
        }
        double iops = h.count() / seconds;
        double mibs = bytes / seconds / 1048576.0;
        out.printf(Locale.ROOT, "%5s: IOPS=%.0f, BW=%.1fMiB/s (%.1fMB/s)(%d requests, %d bytes)%n", dir, iops, mibs,
                bytes / seconds / 1e6, h.count(), bytes);
        out.printf(Locale.ROOT, "    clat (usec): min=%.1f, max=%.1f, avg=%.1f%n", h.min() / 1e3, h.max() / 1e3, h.mean() / 1e3);
        out.printf(Locale.ROOT, "    clat percentiles (usec): p50=%.1f, p99=%.1f, p99.9=%.1f%n", h.percentile(50) / 1e3,
                h.percentile(99) / 1e3, h.percentile(99.9) / 1e3);
        result.put(dir + "_requests", h.count());
        result.put(dir + "_bytes", bytes);
        result.put(dir + "_iops", iops);
        result.put(dir + "_bw_mibs", mibs);
        result.put(dir + "_clat_min_us", h.min() / 1e3);
        result.put(dir + "_clat_mean_us", h.mean() / 1e3);
        result.put(dir + "_clat_max_us", h.max() / 1e3);
        result.put(dir + "_clat_p50_us", h.percentile(50) / 1e3);
        result.put(dir + "_clat_p99_us", h.percentile(99) / 1e3);
        result.put(dir + "_clat_p999_us", h.percentile(99.9) / 1e3);
    }

    static String name(Rw rw) {
        return rw.name().toLowerCase(Locale.ROOT);
    }

    static final class RwConverter implements picocli.CommandLine.ITypeConverter<Rw> {
        @Override
        public Rw convert(String v) {
            for (Rw r : Rw.values()) {
                if (name(r).equals(v.trim().toLowerCase(Locale.ROOT))) {
                    return r;
                }
            }
            throw new picocli.CommandLine.TypeConversionException("'" + v + "' is not read | write | randread | randwrite | randrw");
        }
    }

    /**
     * One queue's load: its thread keeps {@code depth} requests in flight over its own stripe of the region (so no two
     * queues ever touch the same block and a read can be checked against the last write), records each completion's
     * latency in its own histograms, and checks what it reads when verifying. Allocation-free once running: a
     * request's state lives in arrays indexed by its slot.
     */
    static final class Job implements Runnable, BlkDriver.Completion {
        private static final VarHandle COUNTS = MethodHandles.arrayElementVarHandle(long[].class);
        private static final int READS = 0;
        private static final int WRITES = 1;
        private static final int READ_BYTES = 2;
        private static final int WRITE_BYTES = 3;
        /** At most this many verify failures are described on stderr; the rest are counted. */
        private static final int DESCRIBED = 10;
        private static final String USED_LENGTH = "used length";
        static final int RUN = 0;
        static final int HOLD = 1;
        static final int ABANDON = 2;

        final BlkDriver driver;
        final int q;
        final int depth;
        final int bs;
        final Rw rw;
        final int mixRead;
        final long firstBlock;
        final long stripe;
        final boolean verify;
        final long runId;
        final boolean timed;
        final long stallNanos;
        final PrintStream err;
        final LatencyHistogram readLatency = new LatencyHistogram();
        final LatencyHistogram writeLatency = new LatencyHistogram();
        /**
         * Progress counters, written by the queue's thread only, read by the progress printer. Opaque on both sides:
         * each value must be read whole and eventually fresh, but the printer needs no order between them (a line
         * a second may pair a read count with a byte count a request apart), so no acquire/release is paid per
         * request; the final figures come from the histograms after the thread is joined.
         */
        private final long[] counts = new long[4];
        /** Per slot: when it was submitted, its block (relative to the stripe), whether a write, its generation. */
        private final long[] submitted;
        private final long[] slotBlock;
        private final boolean[] slotWrite;
        private final long[] slotGeneration;
        private final ByteBuffer[] views;
        /** --verify: per block of the stripe, the generation last written (0: never) and whether a request is on it. */
        private final int[] generation;
        private final long[] busy;
        private final BlockPattern pattern = new BlockPattern();
        volatile long deadline;
        /** Set by the signal hook before it cuts {@link #deadline}: no read-back pass starts after it. */
        volatile boolean stopped;
        /** Control thread to this one: {@link #RUN}, {@link #HOLD} (reconnecting) or {@link #ABANDON}. */
        volatile int control = RUN;
        /** This thread to the control thread: it holds, touching no ring, until {@link #control} changes. */
        volatile boolean held;
        /** Requests issued in all passes; those not completed at the end are lost. */
        long submittedTotal;
        long completedTotal;
        /**
         * Completions of no request in flight, or of another request than the one in flight on their id (a second
         * completion landing on a reused id: the status still unwritten, or a used length this request cannot have,
         * or one past its writable bytes); the queue ends at the first (see {@link #isDuplicate}).
         */
        long duplicated;
        long ioErrors;
        long verifyErrors;
        long uncheckedReads;
        volatile Exception failure;
        private long sequential;
        private long issued;
        private long rng;
        /** write --verify: the read-back pass after the writes. */
        private boolean readBack;

        Job(BlkDriver driver, int q, int depth, int bs, Rw rw, int mixRead, long firstBlock, long stripe, boolean verify,
            long runId, boolean timed, long stallNanos, PrintStream err) {
            this.driver = driver;
            this.q = q;
            this.depth = depth;
            this.bs = bs;
            this.rw = rw;
            this.mixRead = mixRead;
            this.firstBlock = firstBlock;
            this.stripe = stripe;
            this.verify = verify;
            this.runId = runId;
            this.timed = timed;
            this.stallNanos = stallNanos;
            this.err = err;
            int slots = driver.depth(q);
            submitted = new long[slots];
            slotBlock = new long[slots];
            slotWrite = new boolean[slots];
            slotGeneration = new long[slots];
            views = new ByteBuffer[slots];
            generation = verify ? new int[(int) stripe] : null;
            busy = verify ? new long[(int) ((stripe + 63) >>> 6)] : null;
            rng = ThreadLocalRandom.current().nextLong() | 1;
        }

        long readsDone() {
            return (long) COUNTS.getOpaque(counts, READS);
        }

        long writesDone() {
            return (long) COUNTS.getOpaque(counts, WRITES);
        }

        long readBytesDone() {
            return (long) COUNTS.getOpaque(counts, READ_BYTES);
        }

        long writeBytesDone() {
            return (long) COUNTS.getOpaque(counts, WRITE_BYTES);
        }

        @Override
        public void run() {
            readBack = false;
            try {
                load();
                if (verify && rw.writes() && control != ABANDON) {
                    // read back everything this queue wrote, each block checked against its last generation
                    readBack = true;
                    sequential = 0;
                    issued = 0;
                    // Lifted first, stopped read after (both volatile): either this thread sees the signal's flag
                    // and cuts the deadline itself, or the hook's cut comes after this write and stands.
                    deadline = Long.MAX_VALUE;
                    if (stopped) {
                        deadline = System.nanoTime();
                    }
                    load();
                }
            } catch (Exception e) {
                if (isDuplicate(e)) {
                    duplicated++;
                }
                failure = e;
            }
        }

        /**
         * Whether {@code e} ended a queue on a completion of no request, or of another request than the one in
         * flight on the id: a used id of no request in flight; a status byte still 0xFF (the driver pre-sets it: the
         * device never finished this request, so the entry completes an earlier one that had the same id); a used
         * length other than the request's ({@link #completed}); one past its writable bytes (a read's completion on a
         * write). A status of another value is a device that wrote garbage, not a duplicate.
         */
        static boolean isDuplicate(Exception e) {
            return e instanceof InvalidUsedIdException || e instanceof UsedLengthTooLargeException
                    || e instanceof BadCompletionException b
                    && (b.field().equals(USED_LENGTH) || b.field().equals("status") && b.value() == 0xFF);
        }

        /** Requests issued and never completed: the back-end went away for good, stalled, or broke the queue. */
        long lost() {
            return submittedTotal - completedTotal;
        }

        /**
         * Keeps up to {@code depth} requests in flight until the time or the pass is over, then drains.
         *
         * @throws RequestsStalledException when requests are in flight and none completes for the stall time-out (a
         *         back-end that stopped, or lost requests): the run ends rather than waiting for ever
         */
        private void load() throws InterruptedException {
            long limit = readBack ? Math.min(stripe, writtenBlocks()) : timed ? Long.MAX_VALUE : stripe;
            long progress = System.nanoTime();
            while (true) {
                if (control != RUN) {
                    if (!resume()) {
                        return;
                    }
                    progress = System.nanoTime(); // the time held is no stall
                }
                boolean more = issued < limit && System.nanoTime() < deadline;
                int added = 0;
                while (more && driver.inFlight(q) < depth) {
                    int slot = driver.acquire(q);
                    if (slot < 0) {
                        break;
                    }
                    if (!submit(slot)) {
                        driver.release(q, slot);
                        break;
                    }
                    issued++;
                    submittedTotal++;
                    added++;
                    more = issued < limit;
                }
                if (added > 0) {
                    driver.kick(q);
                }
                int done = driver.complete(q, this);
                if (done > 0 || added > 0) {
                    progress = System.nanoTime();
                } else {
                    if (driver.inFlight(q) == 0 && !more) {
                        return;
                    }
                    if (System.nanoTime() - progress > stallNanos) {
                        throw new RequestsStalledException(q, driver.inFlight(q), stallNanos);
                    }
                    driver.await(q, 1_000_000L);
                }
            }
        }

        /**
         * Waits while the control thread reconnects; false when it gave up (the requests in flight are lost). The
         * volatile write of {@link #held} publishes this thread's ring state to it (it reads held before it touches a
         * ring), and the volatile read of {@link #control} that ends the wait makes what it did to the rings
         * (resubmissions) visible here. Out of line: it is cold, and {@link #load}'s loop stays small for the JIT
         * (the loop allocates nothing whether compiled or not: DriveBlkJobTest measures it).
         */
        private boolean resume() {
            if (control == HOLD) {
                held = true;
                while (control == HOLD) {
                    LockSupport.parkNanos(1_000_000L);
                }
                held = false;
            }
            return control != ABANDON;
        }

        private long writtenBlocks() {
            long n = 0;
            for (int g : generation) {
                n += g != 0 ? 1 : 0;
            }
            return n;
        }

        /** Puts the next request in {@code slot}; false when none can go now (verify: every candidate block busy). */
        private boolean submit(int slot) {
            boolean write = !readBack && switch (rw) {
                case READ, RANDREAD -> false;
                case WRITE, RANDWRITE -> true;
                case RANDRW -> Long.remainderUnsigned(next(), 100) >= mixRead;
            };
            long block = -1;
            for (int tries = 0; tries < 8 && block < 0; tries++) {
                long b = readBack ? nextWritten() : rw.random() ? Long.remainderUnsigned(next(), stripe) : sequential++ % stripe;
                if (b >= 0 && (!verify || !isBusy(b))) {
                    block = b;
                }
            }
            if (block < 0) {
                return false;
            }
            long offset = (firstBlock + block) * bs;
            long sector = offset >>> BlkLayout.SECTOR_SHIFT;
            slotBlock[slot] = block;
            slotWrite[slot] = write;
            if (verify) {
                setBusy(block, true);
                if (write) {
                    // an int: a block would need 2^31 writes in one run to wrap it
                    long g = generation[(int) block] + 1;
                    slotGeneration[slot] = g;
                    pattern.fill(view(slot), bs, offset, runId, g);
                } else {
                    // read-only workloads check what an earlier run left; the others what this one wrote last
                    slotGeneration[slot] = rw.writes() ? generation[(int) block] : BlockPattern.ANY_GENERATION;
                }
            }
            submitted[slot] = System.nanoTime();
            if (write) {
                driver.write(q, slot, sector, bs);
            } else {
                driver.read(q, slot, sector, bs);
            }
            return true;
        }

        /** The read-back pass: the next block that was written, in order. */
        private long nextWritten() {
            while (sequential < stripe) {
                long b = sequential++;
                if (generation[(int) b] != 0) {
                    return b;
                }
            }
            return -1;
        }

        @Override
        public void completed(int slot, int status, long usedLength) {
            boolean write = slotWrite[slot];
            // A completed read wrote its data and the status, a write only the status (every back-end this drives
            // says so: ours, qemu-storage-daemon). Checked on OK only: a failed request may report less.
            long expected = write ? 1 : bs + 1L;
            if (status == BlkLayout.S_OK && usedLength != expected) {
                throw new BadCompletionException(q, slot, USED_LENGTH, usedLength, (write ? "a write" : "a read of " + bs
                        + " bytes") + " returns " + expected + "; a completion of an earlier request on the same id?");
            }
            long latency = System.nanoTime() - submitted[slot];
            completedTotal++;
            long block = slotBlock[slot];
            if (write) {
                writeLatency.record(latency);
                COUNTS.setOpaque(counts, WRITES, counts[WRITES] + 1);
                COUNTS.setOpaque(counts, WRITE_BYTES, counts[WRITE_BYTES] + bs);
            } else {
                readLatency.record(latency);
                COUNTS.setOpaque(counts, READS, counts[READS] + 1);
                COUNTS.setOpaque(counts, READ_BYTES, counts[READ_BYTES] + bs);
            }
            if (status != BlkLayout.S_OK) {
                ioErrors++;
                if (ioErrors <= DESCRIBED) {
                    err.printf(Locale.ROOT, "drive blk: queue %d: %s of %d bytes at byte %d completed with status %d%n", q,
                            write ? "write" : "read", bs, (firstBlock + block) * bs, status);
                }
            } else if (verify) {
                if (write) {
                    generation[(int) block] = (int) slotGeneration[slot];
                } else {
                    check(slot, block);
                }
            }
            if (verify) {
                setBusy(block, false);
            }
        }

        private void check(int slot, long block) {
            long expected = slotGeneration[slot];
            if (expected == 0) {
                uncheckedReads++; // randrw: a block not written yet in this run holds whatever it held
                return;
            }
            long offset = (firstBlock + block) * bs;
            BlockPattern.Verdict v = pattern.check(view(slot), bs, offset, runId, expected);
            if (v != BlockPattern.Verdict.OK) {
                verifyErrors++;
                if (verifyErrors <= DESCRIBED) {
                    err.printf(Locale.ROOT, "drive blk: queue %d: verify: block at byte %d: %s (expected generation %d)%n",
                            q, offset, v, expected);
                }
            }
        }

        private ByteBuffer view(int slot) {
            ByteBuffer b = views[slot];
            if (b == null) {
                b = driver.data(q, slot).asByteBuffer();
                views[slot] = b;
            }
            return b;
        }

        private boolean isBusy(long b) {
            return (busy[(int) (b >>> 6)] & (1L << b)) != 0;
        }

        private void setBusy(long b, boolean on) {
            int i = (int) (b >>> 6);
            busy[i] = on ? busy[i] | (1L << b) : busy[i] & ~(1L << b);
        }

        /** xorshift64*: the offsets and the read/write mix, cheap and allocation-free. */
        private long next() {
            rng ^= rng >>> 12;
            rng ^= rng << 25;
            rng ^= rng >>> 27;
            return rng * 0x2545F4914F6CDD1DL;
        }
    }
}
