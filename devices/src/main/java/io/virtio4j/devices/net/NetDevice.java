package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.devices.metrics.MetricsSource;
import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.devices.worker.DeviceRunners;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.os.FramePort;
import io.virtio4j.os.TunTap;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VirtioDevice;
import io.virtio4j.vhost.protocol.ProtocolFeatures;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * A virtio-net device: {@code pairs} receive/transmit queue pairs, each served by its own worker thread. The
 * control queue, when the driver has one, is handled by the front-end (QEMU, DPDK virtio-user), never by a
 * vhost-user back-end.
 *
 * <p>In {@link NetMode.Tap} mode the device bridges its queues to a tap device: one tap queue per queue pair
 * (a multi-queue tap when there are several pairs), opened, or created, when the device is constructed, so the
 * interface exists as soon as {@code serve net} runs and stays across front-end connections. {@link #close()}
 * releases it.
 *
 * <p>Each pair's queues are served by a {@link QueueRunner} of its own; the pair's work is a
 * {@link ReflectorWorker} or a {@link TapBridgeWorker}.
 */
public final class NetDevice implements VirtioDevice, MetricsSource, AutoCloseable {

    /**
     * TEST ONLY, never for use: when this system property is "true", the receive queues do not mark the frames they
     * write into the guest's buffers in the dirty log (used rings still are). Pages the back-end fills during a live
     * migration are then not sent again, and a guest that reads them after the move finds stale bytes: the negative
     * control of {@code peers/qemu-migrate.sh --device net}, which proves its check can fail. Read when a receive queue
     * is attached; set by serve net's hidden --debug-no-dirty-log.
     */
    public static final String DEBUG_SKIP_RX_DATA_LOG = "virtio4j.debug.net.skipRxDataLog";

    /**
     * Options of a net device. Errors name the component ({@link InvalidNetOptionException#option()}).
     *
     * @param pairs           receive/transmit queue pairs, in [1, 128]
     * @param notification    how each virtqueue is waited on, by index (receive queue 2p, transmit queue 2p + 1);
     *                        tap mode takes NOTIFY only (it sleeps on the tap and on kicks)
     * @param hybridSpinNanos how long HYBRID queues are spun on before their thread sleeps
     * @param weight          frames per queue per pass, at least 1
     * @param cpus            CPUs to pin the pairs' threads to, round robin (empty: not pinned)
     */
    public record Options(int pairs, NetMode mode, NotificationMode[] notification, long hybridSpinNanos, int weight,
                          int[] cpus, byte[] mac, int mtu) {
        /** {@code serve net}'s defaults, which an embedded back-end measured as the served one uses too. */
        public static final int DEFAULT_WEIGHT = 256;
        public static final long DEFAULT_HYBRID_SPIN_NANOS = 50_000;
        public static final String DEFAULT_MAC = "52:54:00:12:34:56";
        public static final int DEFAULT_MTU = 1500;

        public Options {
            if (pairs < 1 || pairs > 128) {
                throw new InvalidNetOptionException("pairs", pairs, "must be in [1, 128]");
            }
            if (mode == null) {
                throw new InvalidNetOptionException("mode", null, "a mode is required");
            }
            if (weight < 1) {
                throw new InvalidNetOptionException("weight", weight, "must be >= 1");
            }
            if (hybridSpinNanos < 0) {
                throw new InvalidNetOptionException("hybridSpinNanos", hybridSpinNanos, "must be >= 0");
            }
            if (mac == null || mac.length != 6) {
                throw new InvalidNetOptionException("mac", mac == null ? null : mac.length + " bytes",
                        "a MAC address has 6 bytes");
            }
            if (mtu < 68 || mtu > 65535) {
                throw new InvalidNetOptionException("mtu", mtu, "must be in [68, 65535]");
            }
            if (notification == null || notification.length != 2 * pairs) {
                throw new InvalidNetOptionException("notification", notification == null ? null : notification.length
                        + " modes", "needs one mode per virtqueue: " + 2 * pairs);
            }
            notification = notification.clone();
            for (int i = 0; i < notification.length; i++) {
                if (notification[i] == null) {
                    throw new InvalidNetOptionException("notification", "queue " + i + ": null", "a mode is required");
                }
                if (mode instanceof NetMode.Tap && notification[i] != NotificationMode.NOTIFY) {
                    throw new InvalidNetOptionException("notification", "queue " + i + ": " + notification[i],
                            "tap mode sleeps on the tap and on kicks: only NOTIFY");
                }
            }
            cpus = cpus == null ? new int[0] : cpus.clone();
            mac = mac.clone();
        }

        /** Options with one notification mode for every virtqueue. */
        public Options(int pairs, NetMode mode, NotificationMode notification, long hybridSpinNanos, int weight,
                       int[] cpus, byte[] mac, int mtu) {
            this(pairs, mode, allQueues(pairs, notification), hybridSpinNanos, weight, cpus, mac, mtu);
        }

        /** How virtqueue {@code queue} is waited on. */
        public NotificationMode notification(int queue) {
            return notification[queue];
        }

        @Override
        public NotificationMode[] notification() {
            return notification.clone();
        }

        private static NotificationMode[] allQueues(int pairs, NotificationMode mode) {
            NotificationMode[] m = new NotificationMode[Math.max(0, 2 * pairs)];
            java.util.Arrays.fill(m, mode);
            return m;
        }
    }

    private final Options options;
    /** One runner per queue pair. */
    private final DeviceRunners<PairWork, NetStats> runners;
    /** Tap mode: one port per queue pair. */
    private final FramePort[] ports;
    private final boolean ownsPorts;
    private volatile long negotiated;

    /** A device as {@code options} say; in tap mode it opens (or creates) the tap now. */
    public NetDevice(Options options) {
        this(options, options.mode() instanceof NetMode.Tap t ? openTaps(t.name(), options.pairs()) : null, true);
    }

    /**
     * A tap-mode device over ports opened by the caller (one per queue pair), which stay the caller's to close:
     * for running one tap through several devices in turn, e.g. an experiment switching disciplines.
     */
    public static NetDevice overPorts(Options options, List<? extends FramePort> ports) {
        if (!(options.mode() instanceof NetMode.Tap) || ports.size() != options.pairs()) {
            throw new InvalidNetOptionException("mode", options.mode(), "a device over ports is in tap mode with one"
                    + " port per queue pair: " + options.pairs() + " pairs, " + ports.size() + " ports");
        }
        return new NetDevice(options, ports.toArray(new FramePort[0]), false);
    }

    private NetDevice(Options options, FramePort[] ports, boolean ownsPorts) {
        this.options = options;
        this.ports = ports;
        this.ownsPorts = ownsPorts;
        this.runners = new DeviceRunners<>("virtio4j-net-pair", options.pairs(), options.cpus(),
                options.hybridSpinNanos(), this::newWork, PairWork::stats, NetStats::new, NetStats::plus);
    }

    private static FramePort[] openTaps(String tap, int pairs) {
        FramePort[] taps = new FramePort[pairs];
        boolean multiQueue = pairs > 1;
        String name = tap;
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
                | VirtioFeatures.bit(VirtioFeatures.RING_PACKED)
                | VirtioFeatures.bit(VirtioFeatures.IN_ORDER)
                // dirty logging for migration: RxDelivery marks every frame it copies into the guest's buffers (the
                // only bytes a net back-end writes there; QEMU serves the control queue itself)
                | VirtioFeatures.bit(ProtocolFeatures.VHOST_F_LOG_ALL)
                | (options.pairs() > 1 ? VirtioFeatures.bit(NetFeatures.MQ) : 0);
    }

    /** Remembers the latest negotiation, for {@link #negotiatedFeatures()}. */
    @Override
    public void featuresNegotiated(long features) {
        negotiated = features;
    }

    /** The virtio features the front-end last set (SET_FEATURES), 0 before any; readable from any thread. */
    public long negotiatedFeatures() {
        return negotiated;
    }

    @Override
    public int maxQueues() {
        return 2 * options.pairs();
    }

    /**
     * MQ (GET_QUEUE_NUM) and CONFIG (GET_CONFIG reads the MAC, status, queue pairs and MTU). Not INFLIGHT_SHMFD: a
     * network loses packets anyway and its protocols resend them, a packet sent twice is worse than one lost, and
     * QEMU's vhost-user-net never asks for the area (only vhost-user-blk and -scsi do).
     */
    @Override
    public long protocolFeatures() {
        return ProtocolFeatures.bit(ProtocolFeatures.MQ) | ProtocolFeatures.bit(ProtocolFeatures.CONFIG);
    }

    /** GET_QUEUE_NUM counts queue pairs for virtio-net: QEMU and DPDK virtio-user read it so. */
    @Override
    public int reportedQueueCount() {
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

    /**
     * Hands the queue to its pair's runner (started on first use).
     *
     * @throws NotificationModeRejectedException in tap mode, when the front-end asked to be polled (NOFD kick)
     */
    @Override
    public void startQueue(int index, QueueContext queue) throws NotificationModeRejectedException {
        if (options.mode() instanceof NetMode.Tap && queue.kick() == null) {
            throw new NotificationModeRejectedException(index, NotificationMode.POLL,
                    "the front-end gave no kick eventfd (NOFD), and tap mode sleeps on the tap and on kicks");
        }
        runners.attach(index / 2, queue, options.notification(index));
    }

    @Override
    public void stopQueue(int index) {
        runners.detach(index / 2, index);
    }

    @Override
    public void reset() {
        runners.reset();
    }

    /** Unmaps once every queue thread that did not stop has ended (never, if one never does). */
    @Override
    public void retire(Runnable unmap) {
        runners.retire(unmap);
    }

    private PairWork newWork(int pair) {
        // Per-ring rules (merged receive buffers) come with each attached ring's features, not from here:
        // the runner outlives a renegotiation while the rings are stopped.
        return switch (options.mode()) {
            case NetMode.Tap t -> new TapBridgeWorker(pair, ports[pair], t.polling(), options.weight());
            case NetMode.Reflect r -> new ReflectorWorker(pair, r.reflection(), options.weight());
        };
    }

    /**
     * The id of the thread serving queue pair {@code pair} now (for ThreadMXBean CPU time and allocation), or -1
     * while no front-end has started its queues.
     */
    public long workerThreadId(int pair) {
        return runners.threadId(pair);
    }

    /**
     * Null when the thread serving queue pair {@code pair} now is pinned to its CPU (or was not asked to be), else why
     * it is not: not started, not yet pinned, or refused by the kernel.
     */
    public String workerPinError(int pair) {
        return runners.pinError(pair);
    }

    /** Statistics of queue pair {@code pair} over the device's life, across connections. */
    public NetStats stats(int pair) {
        return runners.stats(pair);
    }

    /**
     * Every pair's counters as samples, labelled {@code device}, {@code queue}, {@code qp} and {@code direction} (see
     * {@link NetStats}); read without waiting for the queue threads.
     */
    @Override
    public void collect(PrometheusText out, String device) {
        NetStats.collect(out, device, runners.allStats(NetStats[]::new));
    }

    public int pairs() {
        return options.pairs();
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
