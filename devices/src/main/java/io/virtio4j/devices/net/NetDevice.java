package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.policy.VirtioFeatures;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.backend.VhostUserSession;
import io.virtio4j.vhost.backend.VirtioDevice;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A virtio-net device: {@code pairs} receive/transmit queue pairs, each served by its own
 * {@link QueuePairWorker} thread. The control queue, when the driver has one, is handled by the front-end
 * (QEMU, DPDK virtio-user), never by a vhost-user back-end.
 */
public final class NetDevice implements VirtioDevice, VhostUserSession.QueuePairs {

    /** Options of {@code serve net}. */
    public record Options(int pairs, NetMode mode, NotificationMode notification, long hybridSpinNanos, int weight,
                          int[] cpus, byte[] mac, int mtu) {
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
        }
    }

    private final Options options;
    private final QueuePairWorker[] workers;
    private final NetStats[] retired;
    private volatile long negotiated;

    public NetDevice(Options options) {
        this.options = options;
        this.workers = new QueuePairWorker[options.pairs()];
        this.retired = new NetStats[options.pairs()];
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
        QueuePairWorker w = workers[index / 2];
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

    private QueuePairWorker worker(int pair) {
        if (workers[pair] == null) {
            int[] cpus = options.cpus();
            int cpu = cpus.length == 0 ? -1 : cpus[pair % cpus.length];
            boolean mergeable = VirtioFeatures.has(negotiated, NetFeatures.MRG_RXBUF);
            workers[pair] = new QueuePairWorker(pair, options.mode(), options.notification(), options.hybridSpinNanos(),
                    options.weight(), cpu, mergeable);
        }
        return workers[pair];
    }

    /** Statistics of queue pair {@code pair} over the device's life, across connections. */
    public synchronized NetStats stats(int pair) {
        QueuePairWorker w = workers[pair];
        return sum(retired[pair], w == null ? null : w.stats());
    }

    public int pairs() {
        return options.pairs();
    }

    private static NetStats sum(NetStats a, NetStats b) {
        NetStats s = new NetStats();
        for (NetStats x : new NetStats[] {a, b}) {
            if (x != null) {
                s.fromGuestPackets += x.fromGuestPackets;
                s.fromGuestBytes += x.fromGuestBytes;
                s.fromGuestDrops += x.fromGuestDrops;
                s.toGuestPackets += x.toGuestPackets;
                s.toGuestBytes += x.toGuestBytes;
                s.kicks += x.kicks;
                s.notifications += x.notifications;
            }
        }
        return s;
    }
}
