package io.virtio4j.devices.net;

import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.vhost.frontend.VhostUserFrontend;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the net device's tests do with a {@link NetDriver} as their guest, on top of its API: connect (retrying
 * while the server is not listening yet) and check the negotiation, frames as byte arrays, blocking receive and
 * transmit completion under a watchdog that fails the test, echo, random frames, raw chains.
 *
 * <p>Waiting for used buffers relies on the back-end's notifications (or, with NOFD, polls), bounded by
 * {@link #WAIT_NANOS}. Like the driver, each ring is driven by one thread at a time.
 */
final class GuestTraffic {
    /** The largest frame the tests send: 1500-byte MTU plus the Ethernet header. */
    static final int MAX_FRAME = 1514;
    private static final long WAIT_NANOS = 20_000_000_000L;

    private GuestTraffic() {
    }

    /** A frame as received: num_buffers from its header, the buffers' used lengths and the frame bytes. */
    record RxFrame(int numBuffers, int[] usedLengths, byte[] frame) {
    }

    /**
     * Connects to the back-end at {@code path} and starts a driver as {@code config} says; checks the back-end
     * took every protocol feature the driver asks for and has exactly the configured queue pairs.
     */
    static NetDriver connect(Path path, NetDriver.Config config) {
        NetDriver d = NetDriver.start(connectWithRetry(path), config);
        try {
            assertEquals(config.protocolFeatures(), d.negotiatedProtocolFeatures(), "protocol features negotiated");
            assertEquals(config.pairs(), d.maxQueuePairs(), "GET_QUEUE_NUM: queue pairs");
            return d;
        } catch (RuntimeException | Error e) {
            d.close();
            throw e;
        }
    }

    /** Connects, retrying while the server is not listening yet. */
    static VhostUserFrontend connectWithRetry(Path path) {
        try {
            return VhostUserFrontend.connect(path, Duration.ofNanos(WAIT_NANOS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while connecting", e);
        }
    }

    // ---- transmit ----

    /** Puts one frame (after a zero virtio_net_hdr) on the pair's transmit ring; no kick. */
    static void addTx(NetDriver d, int pair, byte[] frame) {
        addTx(d, pair, frame, frame.length);
    }

    /** Puts the first {@code len} bytes of {@code frame} on the pair's transmit ring; no kick. */
    static void addTx(NetDriver d, int pair, byte[] frame, int len) {
        if (!d.send(pair, MemorySegment.ofArray(frame), 0, len)) {
            throw new IllegalStateException("transmit ring " + NetDriver.txRing(pair) + " has no free slot");
        }
    }

    /** Adds a raw writable receive buffer (e.g. pointing outside guest memory); a slot is taken like any other. */
    static void addRawRx(NetDriver d, int pair, long gpa, int len) {
        if (!d.addChain(NetDriver.rxRing(pair), new ScatterGather(1).writable(gpa, len))) {
            throw new IllegalStateException("receive ring " + NetDriver.rxRing(pair) + " has no free slot");
        }
    }

    /** Adds a raw transmit chain (e.g. pointing outside guest memory); a slot is taken like any other. */
    static void addRawTx(NetDriver d, int pair, long gpa, int len) {
        if (!d.addChain(NetDriver.txRing(pair), new ScatterGather(1).readable(gpa, len))) {
            throw new IllegalStateException("transmit ring " + NetDriver.txRing(pair) + " has no free slot");
        }
    }

    /**
     * Transmits {@code count} random frames of 60..1514 bytes on the pair, keeping the ring as full as it goes,
     * and waits until the back-end has returned every buffer. Returns the frame bytes sent.
     */
    static long transmitRandom(NetDriver d, int pair, int count, Random rnd) {
        byte[] template = new byte[MAX_FRAME];
        rnd.nextBytes(template);
        long bytes = 0;
        int sent = 0;
        while (sent < count) {
            int added = 0;
            while (sent < count && d.txFree(pair) > 0) {
                int len = 60 + rnd.nextInt(MAX_FRAME - 60 + 1);
                template[0] = (byte) sent; // vary the content a little without regenerating it
                addTx(d, pair, template, len);
                bytes += len;
                sent++;
                added++;
            }
            if (added > 0) {
                d.kickTx(pair);
            }
            if (sent < count) {
                awaitReaped(d, pair);
            }
        }
        awaitTxDone(d, pair);
        return bytes;
    }

    /** Waits until every transmit buffer of the pair has come back. */
    static void awaitTxDone(NetDriver d, int pair) {
        d.kickTx(pair);
        while (d.txInFlight(pair) > 0) {
            awaitReaped(d, pair);
        }
    }

    /** Reclaims at least one transmit buffer, waiting for it (bounded: fails the test). */
    private static void awaitReaped(NetDriver d, int pair) {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (d.reapTx(pair) == 0) {
            awaitUsed(d, NetDriver.txRing(pair), deadline);
        }
    }

    /** One bounded wait for used buffers on {@code ring}; fails the test once the deadline has passed. */
    private static void awaitUsed(NetDriver d, int ring, long deadline) {
        long left = deadline - System.nanoTime();
        boolean signalled;
        try {
            signalled = left > 0 && (ring % 2 == 0 ? d.awaitRx(ring / 2, left) : d.awaitTx(ring / 2, left));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting on ring " + ring, e);
        }
        if (!signalled && deadline - System.nanoTime() <= 0) {
            fail("ring " + ring + ": no used buffer " + (d.config().eventFds() ? "and no notification " : "(polling) ")
                    + "within " + WAIT_NANOS / 1_000_000 + " ms; " + d.queue(ring).inFlight() + " buffers in flight");
        }
    }

    // ---- receive ----

    /** Posts a writable buffer in every free slot of the pair's receive ring and kicks. */
    static void refillRx(NetDriver d, int pair) {
        d.postRx(pair);
    }

    /**
     * Receives one frame from the pair's receive ring, waiting for it (bounded: fails the test), and checks its
     * virtio_net_hdr asks for no offload.
     */
    static RxFrame receive(NetDriver d, int pair) {
        RxFrame[] got = new RxFrame[1];
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (d.receive(pair, 1, (frame, length, numBuffers) -> {
            int[] lens = new int[numBuffers];
            for (int i = 0; i < numBuffers; i++) {
                lens[i] = d.usedLength(pair, i);
            }
            for (int i = 0; i < NetFeatures.HDR_NUM_BUFFERS; i++) {
                assertEquals(0, frame.get(ValueLayout.JAVA_BYTE, i), "virtio_net_hdr byte " + i + " (no offloads)");
            }
            got[0] = new RxFrame(numBuffers, lens,
                    frame.asSlice(NetFeatures.HDR_LEN, length - NetFeatures.HDR_LEN).toArray(ValueLayout.JAVA_BYTE));
        }) == 0) {
            awaitUsed(d, NetDriver.rxRing(pair), deadline);
        }
        return got[0];
    }

    /**
     * Sends {@code frames} on the pair's transmit ring with its receive ring filled first, and receives as many
     * frames back (loopback and macswap modes). The frames must fit the free transmit slots and the receive
     * buffers.
     */
    static List<RxFrame> echo(NetDriver d, int pair, List<byte[]> frames) {
        refillRx(d, pair);
        int need = 0;
        for (byte[] f : frames) {
            need += d.config().buffersFor(f.length);
        }
        if (need > d.rxPosted(pair) || frames.size() > d.txFree(pair)) {
            throw new IllegalArgumentException(frames.size() + " frames need " + need + " receive buffers of "
                    + d.rxPosted(pair) + " posted and " + frames.size() + " transmit slots of " + d.txFree(pair));
        }
        for (byte[] f : frames) {
            addTx(d, pair, f);
        }
        d.kickTx(pair);
        List<RxFrame> got = new ArrayList<>(frames.size());
        for (int i = 0; i < frames.size(); i++) {
            got.add(receive(d, pair));
        }
        awaitTxDone(d, pair);
        return got;
    }

    /** A frame of {@code len} bytes: random unicast destination and source MACs, IPv4 ethertype, random payload. */
    static byte[] randomFrame(Random rnd, int len) {
        byte[] f = new byte[len];
        rnd.nextBytes(f);
        f[0] &= (byte) 0xFE;
        f[6] &= (byte) 0xFE;
        f[12] = 0x08;
        f[13] = 0x00;
        return f;
    }
}
