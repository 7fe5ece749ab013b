package io.virtio4j.cli;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.stats.QueueCounters;
import io.virtio4j.devices.net.NetFeatures;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.devices.net.driver.TxStream;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code virtio4j drive}: vhost-user front-ends, the guest's side played by this process. */
@Command(name = "drive", mixinStandardHelpOptions = true, description = "Drive a vhost-user device as its front-end and guest.",
        footer = {"", "Example: virtio4j drive blk --socket /tmp/blk.sock --rw randwrite --verify"},
        subcommands = {DriveCommand.Net.class, DriveBlk.class})
public final class DriveCommand {

    /**
     * {@code virtio4j drive net}: connects to a vhost-user net back-end (DPDK's net_vhost, ours, any), sets it up
     * as QEMU would, and sends frames: {@code txonly} as fast as the ring takes them, or {@code echo}, which also
     * receives what the back-end sends back (macswap, loopback, io) and checks every echoed frame against the one
     * sent (a sequence number and a pattern in each). Prints a RESULT line in the peers/ scripts' vocabulary.
     */
    @Command(name = "net", mixinStandardHelpOptions = true, sortOptions = false,
            description = "A virtio-net front-end and guest driver over vhost-user.",
            footer = {"", "Example: virtio4j drive net --socket /tmp/net.sock --ring packed --mode echo"})
    static final class Net implements Callable<Integer> {

        @Spec
        CommandSpec spec;
        @Option(names = {"--socket", "--socket-path"}, required = true, paramLabel = "PATH", description = "the back-end's vhost-user socket")
        Path socket;
        @Option(names = "--ring", paramLabel = "split|packed", description = "ring format (default split)",
                converter = Converters.RingFormatConverter.class)
        RingFormat ring = RingFormat.SPLIT;
        @Option(names = "--in-order", arity = "1", paramLabel = "on|off", description = "negotiate VIRTIO_F_IN_ORDER (default off)",
                converter = Converters.OnOffConverter.class)
        boolean inOrder;
        @Option(names = "--queue-size", description = "entries per ring (default ${DEFAULT-VALUE})")
        int queueSize = 256;
        @Option(names = "--mode", paramLabel = "txonly|echo", description = "txonly: send only; echo: send and check "
                + "what comes back (default ${DEFAULT-VALUE})")
        String mode = "txonly";
        @Option(names = "--frame-size", paramLabel = "B", description = "Ethernet frame length without CRC, 60 to 2032 (default ${DEFAULT-VALUE})")
        int frameSize = 64;
        @Option(names = "--packets", paramLabel = "N", description = "send exactly N frames (default: for --duration)")
        long packets;
        @Option(names = "--duration", paramLabel = "S", description = "send for S seconds when --packets is not given (default ${DEFAULT-VALUE})")
        double duration = 5;
        @Option(names = "--warmup", paramLabel = "S", description = "with --duration: send S seconds more first, outside "
                + "the measuring window (counted in TX-packets, not in TX-pps) (default ${DEFAULT-VALUE})")
        double warmup;
        @Option(names = "--drain", paramLabel = "S", description = "after the last frame, wait up to S seconds: echo for "
                + "the echoes, txonly until the back-end has used every frame sent (default ${DEFAULT-VALUE})")
        double drain = 1;
        @Option(names = "--avail-publish", paramLabel = "eager|lazy|adaptive", description = "when the rings publish added "
                + "buffers to the back-end: per buffer, once per kick, adaptively (default eager)",
                converter = Converters.PublicationConverter.class)
        AvailPublication availPublish = AvailPublication.EAGER;
        @Option(names = "--connect-timeout", paramLabel = "S", description = "wait this long for the socket (default ${DEFAULT-VALUE})")
        int connectTimeout = 30;

        private final NetDriver.FrameHandler checker = (f, length, numBuffers) -> check(f, length);
        private long received;
        private long receivedBytes;
        private long corrupt;
        private long duplicate;
        private BitSet seen;

        @Override
        public Integer call() throws Exception {
            boolean echo = switch (mode) {
                case "txonly" -> false;
                case "echo" -> true;
                default -> throw new ParameterException(spec.commandLine(), "--mode: " + mode + " is not txonly or echo");
            };
            if (frameSize < 60 || frameSize > NetDriver.TX_SLOT - 16) {
                throw new ParameterException(spec.commandLine(), "--frame-size: " + frameSize + " is not in [60, "
                        + (NetDriver.TX_SLOT - 16) + "]");
            }
            if (!ring.isValidQueueSize(queueSize)) {
                throw new ParameterException(spec.commandLine(), "--queue-size: " + queueSize + " is not a valid "
                        + ring.name().toLowerCase(Locale.ROOT) + " queue size");
            }
            if (packets < 0 || packets > Integer.MAX_VALUE) {
                throw new ParameterException(spec.commandLine(), "--packets: " + packets + " is not in [1, " + Integer.MAX_VALUE + "]");
            }
            if (!(warmup >= 0 && warmup <= 3600) || (warmup > 0 && packets > 0)) {
                throw new ParameterException(spec.commandLine(), "--warmup: " + warmup + " is not in [0, 3600] seconds"
                        + (packets > 0 ? " or is given with --packets (a warm-up is for --duration)" : ""));
            }
            NetDriver.Config config = NetDriver.Config.defaults().withFormat(ring).withInOrder(inOrder)
                    .withQueueSize(queueSize).withRxBufferSize(2048).withPublication(availPublish);
            seen = echo && packets > 0 ? new BitSet((int) packets) : null;
            VhostUserFrontend fe = VhostUserFrontend.connect(socket, Duration.ofSeconds(connectTimeout));
            try (NetDriver g = NetDriver.start(fe, config); Arena arena = Arena.ofConfined()) {
                TxStream stream = new TxStream(g, 0, arena.allocate(frameSize, 8), 64, echo);
                if (echo) {
                    g.postRx(0);
                }
                long cpu0 = processCpuNanos();
                long t0 = System.nanoTime();
                long windowStart = t0 + (long) (warmup * 1e9);
                long end = packets > 0 ? Long.MAX_VALUE : windowStart + (long) (duration * 1e9);
                long limit = packets > 0 ? packets : Long.MAX_VALUE;
                long sentBeforeWindow = 0;
                boolean warming = warmup > 0;
                long now = t0;
                while (packets > 0 ? stream.sent() < packets : (now = System.nanoTime()) < end) {
                    if (warming && now >= windowStart) {
                        warming = false;
                        t0 = now;
                        cpu0 = processCpuNanos();
                        sentBeforeWindow = stream.sent();
                    }
                    // echo: never more frames on their way than half the receive ring can take back, or a back-end
                    // that finds no receive buffer drops the echo and the count can never be exact
                    int n = stream.round(echo ? Math.min(limit, received + queueSize / 2) : limit);
                    if (echo) {
                        receive(g);
                    }
                    if (n == 0) {
                        Thread.onSpinWait();
                    }
                }
                long t1 = System.nanoTime();
                long cpu1 = processCpuNanos();
                if (echo) {
                    long drainEnd = System.nanoTime() + (long) (drain * 1e9);
                    while (System.nanoTime() < drainEnd && (seen == null || received < packets)) {
                        g.reapTx(0);
                        if (receive(g) == 0) {
                            g.awaitRx(0, 1_000_000);
                        }
                    }
                }
                stream.drain((long) (drain * 1e9));
                double window = (t1 - t0) / 1e9;
                // the transmit ring's own counters (plain fields of this thread, which drove it): how often the
                // publication policy stored the index and how often the back-end had to be woken
                QueueCounters tx = g.queue(NetDriver.txRing(0)).counters();
                int txInFlight = g.txInFlight(0);
                long sent = stream.sent();
                long inWindow = sent - sentBeforeWindow;
                System.out.printf(Locale.ROOT, "RESULT role=virtio4j-driver mode=%s frame=%d ring=%s in_order=%d queue_size=%d "
                                + "avail_publish=%s window_s=%.2f TX-packets=%d TX-bytes=%d win-TX-packets=%d TX-in-flight=%d "
                                + "TX-kicks=%d TX-kicks-suppressed=%d TX-publications=%d RX-packets=%d RX-bytes=%d "
                                + "RX-corrupt=%d RX-duplicate=%d TX-pps=%.0f cpu=%.2f features=0x%x%n",
                        mode, frameSize, ring.name().toLowerCase(Locale.ROOT), inOrder ? 1 : 0, queueSize,
                        availPublish.name().toLowerCase(Locale.ROOT), window, sent, sent * frameSize, inWindow, txInFlight,
                        tx.kicksSent, tx.kicksSuppressed, tx.availIdxWrites, received, receivedBytes, corrupt, duplicate,
                        inWindow / window, (cpu1 - cpu0) / 1e9 / window, config.features());
                System.out.flush();
                return corrupt == 0 && duplicate == 0 && txInFlight == 0 ? 0 : 1;
            }
        }

        /**
         * CPU time of this whole process so far (every thread, the JIT's and the collector's included), or 0 where
         * the platform does not say: {@code cpu=} in the RESULT line is the CPUs' worth of time the process got in
         * the sending window, ~1.00 when it had its CPU to itself.
         */
        private static long processCpuNanos() {
            return ProcessHandle.current().info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        }

        /** Receives what is there, checks each frame, refills the receive ring; returns the frames received. */
        private int receive(NetDriver g) {
            int n = g.receive(0, checker);
            if (n > 0) {
                g.postRx(0);
            }
            return n;
        }

        /**
         * A frame is intact when it has the sent length, the two MACs as sent or swapped (macswap), and the pattern of
         * its sequence number.
         */
        private void check(MemorySegment f, long length) {
            received++;
            long frameLength = length - NetFeatures.HDR_LEN;
            receivedBytes += frameLength;
            long seq = frameLength == frameSize ? TxStream.intactSequence(f, NetFeatures.HDR_LEN, frameSize) : -1;
            boolean ok = seq >= 0 && (packets == 0 || seq < packets);
            if (!ok) {
                corrupt++;
            } else if (seen != null) {
                if (seen.get((int) seq)) {
                    duplicate++;
                }
                seen.set((int) seq);
            }
        }
    }
}
