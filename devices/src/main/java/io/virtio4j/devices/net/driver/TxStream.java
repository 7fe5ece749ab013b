package io.virtio4j.devices.net.driver;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Numbered test frames sent on one queue pair's transmit ring, the way a guest's transmit path sends them: the
 * sending loop of {@code virtio4j drive net} and of the experiments' vhost-user rows, one loop so that both measure
 * the same thing.
 *
 * <p>Every frame is the caller's segment: a broadcast Ethernet header (a switch or a tap would flood it) with the
 * local experimental ethertype 0x88B5, then the frame's sequence number (8 bytes, little-endian), then, with
 * {@code pattern}, bytes that follow from the sequence number ({@link #intactSequence} checks them on the way back).
 * Without a pattern only the sequence number changes from frame to frame: nobody checks the contents, and a
 * per-byte pattern per frame would add a cost of its own to every frame measured.
 *
 * <p>Driven by one thread; sending allocates nothing.
 */
public final class TxStream {
    /** Byte offset of the sequence number in a frame: after the Ethernet header. */
    public static final int SEQ_OFFSET = 14;
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final byte[] DST = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF};
    private static final byte[] SRC = {0x02, 0, 0, 0, 0, 0x01};

    private final NetDriver driver;
    private final int pair;
    private final MemorySegment frame;
    private final int length;
    private final int burst;
    private final boolean pattern;
    private long sent;

    /**
     * @param frame   the frame buffer, as long as every frame (60 to {@link NetDriver#TX_SLOT} - 16 bytes)
     * @param burst   frames added at most between two kicks
     * @param pattern fill each frame with the pattern of its sequence number (for a receiver that checks)
     */
    public TxStream(NetDriver driver, int pair, MemorySegment frame, int burst, boolean pattern) {
        if (frame.byteSize() < 60 || frame.byteSize() > NetDriver.TX_SLOT - 16) {
            throw new IllegalArgumentException("frame length " + frame.byteSize() + " is not in [60, "
                    + (NetDriver.TX_SLOT - 16) + "]");
        }
        if (burst < 1) {
            throw new IllegalArgumentException("burst " + burst + " must be >= 1");
        }
        this.driver = driver;
        this.pair = pair;
        this.frame = frame;
        this.length = (int) frame.byteSize();
        this.burst = burst;
        this.pattern = pattern;
        frame.asSlice(0, 6).copyFrom(MemorySegment.ofArray(DST));
        frame.asSlice(6, 6).copyFrom(MemorySegment.ofArray(SRC));
        frame.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 12, (short) 0x88B5);
        fill(0);
    }

    /**
     * One round of the transmit path: reclaims what the back-end has used, adds frames while the ring has room (at
     * most {@code burst}, and none numbered {@code limit} or beyond), then {@link NetDriver#kickTx}: the ring
     * publishes what was added as its policy says and kicks the back-end if it asked to be.
     *
     * @return frames added
     */
    public int round(long limit) {
        driver.reapTx(pair);
        int n = 0;
        while (n < burst && sent < limit && driver.txFree(pair) > 0) {
            if (pattern) {
                fill(sent);
            } else {
                frame.set(LE_LONG, SEQ_OFFSET, sent);
            }
            driver.send(pair, frame, 0, length);
            sent++;
            n++;
        }
        driver.kickTx(pair);
        return n;
    }

    /** Frames added so far. */
    public long sent() {
        return sent;
    }

    /**
     * Reclaims until the back-end has used every frame sent, for at most {@code timeoutNanos}: then a back-end's
     * receive count can equal {@link #sent()} (a frame still in the ring is neither received nor lost, and no count
     * could be exact). Every frame was published and kicked for by the last {@link #round}; a back-end that sleeps was
     * woken by it.
     *
     * @return true when no frame is left in flight
     */
    public boolean drain(long timeoutNanos) throws InterruptedException {
        long end = System.nanoTime() + timeoutNanos;
        while (driver.txInFlight(pair) > 0 && System.nanoTime() < end) {
            if (driver.reapTx(pair) == 0) {
                driver.awaitTx(pair, 1_000_000);
            }
        }
        return driver.txInFlight(pair) == 0;
    }

    /** Sequence number {@code seq} after the Ethernet header, then the pattern that follows from it. */
    private void fill(long seq) {
        frame.set(LE_LONG, SEQ_OFFSET, seq);
        for (int i = SEQ_OFFSET + 8; i < length; i++) {
            frame.set(ValueLayout.JAVA_BYTE, i, (byte) (seq + i));
        }
    }

    /**
     * The sequence number of a patterned frame of {@code length} bytes at {@code base} in {@code f} (the MAC
     * addresses as sent or swapped, as a macswap back-end returns them), or -1 when it is not one intact.
     */
    public static long intactSequence(MemorySegment f, long base, int length) {
        boolean asSent = macIs(f, base, DST) && macIs(f, base + 6, SRC);
        boolean swapped = macIs(f, base, SRC) && macIs(f, base + 6, DST);
        long seq = f.get(LE_LONG, base + SEQ_OFFSET);
        if (!(asSent || swapped) || seq < 0) {
            return -1;
        }
        for (int i = SEQ_OFFSET + 8; i < length; i++) {
            if (f.get(ValueLayout.JAVA_BYTE, base + i) != (byte) (seq + i)) {
                return -1;
            }
        }
        return seq;
    }

    private static boolean macIs(MemorySegment f, long offset, byte[] mac) {
        for (int i = 0; i < 6; i++) {
            if (f.get(ValueLayout.JAVA_BYTE, offset + i) != mac[i]) {
                return false;
            }
        }
        return true;
    }
}
