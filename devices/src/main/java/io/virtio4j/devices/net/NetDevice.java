package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.os.FramePort;
import io.virtio4j.os.TunTap;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * A virtio-net device: {@code pairs} receive/transmit queue pairs, each served by its own worker thread. The
 * control queue, when the driver has one, is handled by the front-end (QEMU, DPDK virtio-user), never by a
 * vhost-user back-end.
 *
 * <p>In {@link NetMode#TAP} mode the device bridges its queues to a tap device: one tap queue per queue pair
 * (a multi-queue tap when there are several pairs), opened, or created, when the device is constructed, so the
 * interface exists as soon as {@code serve net} runs and stays across front-end connections. {@link #close()}
 * releases it.
 */
public final class NetDevice implements VirtioDevice, VhostUserSession.QueuePairs, AutoCloseable {

    /**
     * Options of {@code serve net}.
     *
     * @param tap     the tap's interface name in {@link NetMode#TAP} mode (a {@code %d} lets the kernel number it),
     *                null otherwise
     * @param polling how the tap mode watches its tap
     */
    public record Options(int pairs, NetMode mode, NotificationMode notification, long hybridSpinNanos, int weight,
                          int[] cpus, byte[] mac, int mtu, String tap, TapPolling polling) {
        public Options {
            if (pairs < 1 || pairs > 128) {
                throw new IllegalArgumentException("--queues must be in [1, 128], got " + pairs);
            }
            if (weight < 1) {
                throw new IllegalArgumentException("--weight must be >= 1, got " + weight);
            }
            if (mac.length != 6) {
                throw new IllegalArgumentException("a MAC address has 6 bytes");
            }
            if (mtu < 68 || mtu > 65535) {
                throw new IllegalArgumentException("--mtu must be in [68, 65535], got " + mtu);
            }
            if ((mode == NetMode.TAP) != (tap != null)) {
                throw new IllegalArgumentException(mode == NetMode.TAP ? "tap mode needs a tap name (--mode tap:NAME)"
                        : "a tap name is only for tap mode");
            }
            if (polling == null) {
                polling = TapPolling.current();
            }
        }

        /** Options of a device that does not use a tap. */
        public Options(int pairs, NetMode mode, NotificationMode notification, long hybridSpinNanos, int weight,
                       int[] cpus, byte[] mac, int mtu) {
            this(pairs, mode, notification, hybridSpinNanos, weight, cpus, mac, mtu, null, TapPolling.current());
        }
    }

    private final Options options;
    private final PairWorker[] workers;
    private final NetStats[] retired;
    /** Tap mode: one port per queue pair. */
    private final FramePort[] ports;
    private final boolean ownsPorts;
    private volatile long negotiated;

    /** A device as {@code options} say; in tap mode it opens (or creates) the tap now. */
    public NetDevice(Options options) {
        this(options, options.mode() == NetMode.TAP ? openTaps(options) : null, true);
    }

    /**
     * A tap-mode device over ports opened by the caller (one per queue pair), which stay the caller's to close:
     * for running one tap through several devices in turn, e.g. an experiment switching disciplines.
     */
    public static NetDevice overPorts(Options options, List<? extends FramePort> ports) {
        if (options.mode() != NetMode.TAP || ports.size() != options.pairs()) {
            throw new IllegalArgumentException("tap mode with one port per queue pair: " + options.pairs()
                    + " pairs, " + ports.size() + " ports, mode " + options.mode());
        }
        return new NetDevice(options, ports.toArray(new FramePort[0]), false);
    }

    private NetDevice(Options options, FramePort[] ports, boolean ownsPorts) {
        this.options = options;
        this.workers = new PairWorker[options.pairs()];
        this.retired = new NetStats[options.pairs()];
        this.ports = ports;
        this.ownsPorts = ownsPorts;
    }

    private static FramePort[] openTaps(Options options) {
        FramePort[] taps = new FramePort[options.pairs()];
        boolean multiQueue = options.pairs() > 1;
        String name = options.tap();
        try {
            for (int i = 0; i < taps.length; i++) {
                TunTap t = TunTap.open(name, multiQueue);
                name = t.name(); // a %d template is resolved by the first open; the other queues attach to it
                taps[i] = t;
            }
            return taps;
        } catch (RuntimeException e) {
            for (FramePort t : taps) {
                if (t != null) {
                    t.close();
                }
            }
            throw e;
        }
    }

    /** The tap's interface name in tap mode, else null. */
    public String tapName() {
        return ports == null ? null : ports[0].name();
    }

    @Override
    public long features() {
        return VirtioFeatures.bit(VirtioFeatures.VERSION_1)
                | VirtioFeatures.bit(VirtioFeatures.EVENT_IDX)
                | VirtioFeatures.bit(VirtioFeatures.INDIRECT_DESC)
                | VirtioFeatures.bit(NetFeatures.MRG_RXBUF)
                | VirtioFeatures.bit(NetFeatures.MAC)
                | VirtioFeatures.bit(NetFeatures.STATUS)
                | VirtioFeatures.bit(NetFeatures.MTU)
                | VirtioFeatures.bit(NetFeatures.CTRL_VQ)
                | (options.pairs() > 1 ? VirtioFeatures.bit(NetFeatures.MQ) : 0);
    }

    @Override
    public int maxQueues() {
        return 2 * options.pairs();
    }

    @Override
    public int queuePairs() {
        return options.pairs();
    }

    @Override
    public byte[] config() {
        ByteBuffer b = ByteBuffer.allocate(NetFeatures.CONFIG_LEN).order(ByteOrder.LITTLE_ENDIAN);
        b.put(options.mac());
        b.putShort((short) NetFeatures.STATUS_LINK_UP);
        b.putShort((short) options.pairs());
        b.putShort((short) options.mtu());
        return b.array();
    }

    @Override
    public void featuresNegotiated(long features) {
        negotiated = features;
    }

    @Override
    public synchronized void startQueue(int index, QueueContext queue) {
        worker(index / 2).attach(index % 2 == 0, queue);
    }

    @Override
    public synchronized void stopQueue(int index) {
        PairWorker w = workers[index / 2];
        if (w != null) {
            w.detach(index % 2 == 0);
        }
    }

    @Override
    public synchronized void reset() {
        for (int i = 0; i < workers.length; i++) {
            if (workers[i] != null) {
                workers[i].shutdown();
                retired[i] = sum(retired[i], workers[i].stats());
                workers[i] = null;
            }
        }
    }

    private PairWorker worker(int pair) {
        if (workers[pair] == null) {
            int[] cpus = options.cpus();
            int cpu = cpus.length == 0 ? -1 : cpus[pair % cpus.length];
            boolean mergeable = VirtioFeatures.has(negotiated, NetFeatures.MRG_RXBUF);
            workers[pair] = options.mode() == NetMode.TAP
                    ? new TapPairWorker(pair, ports[pair], options.polling(), options.weight(), cpu, mergeable)
                    : new QueuePairWorker(pair, options.mode(), options.notification(), options.hybridSpinNanos(),
                            options.weight(), cpu, mergeable);
        }
        return workers[pair];
    }

    /**
     * The id of the thread serving queue pair {@code pair} now (for ThreadMXBean CPU time and allocation), or -1
     * while no front-end has started its queues.
     */
    public synchronized long workerThreadId(int pair) {
        PairWorker w = workers[pair];
        return w == null ? -1 : w.threadId();
    }

    /** Statistics of queue pair {@code pair} over the device's life, across connections. */
    public synchronized NetStats stats(int pair) {
        PairWorker w = workers[pair];
        return sum(retired[pair], w == null ? null : w.stats());
    }

    public int pairs() {
        return options.pairs();
    }

    private static NetStats sum(NetStats a, NetStats b) {
        return new NetStats().plus(a).plus(b);
    }

    /** Stops the workers and, in tap mode, closes the taps this device opened. */
    @Override
    public synchronized void close() {
        reset();
        if (ports != null && ownsPorts) {
            for (FramePort p : ports) {
                p.close();
            }
        }
    }
}
