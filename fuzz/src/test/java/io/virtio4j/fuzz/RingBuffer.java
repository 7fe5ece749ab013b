package io.virtio4j.fuzz;

import io.virtio4j.core.driver.ScatterGather;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One buffer the honest driver of a ring fuzz target added: its elements (all in its own pool slot), and where it
 * is in its life. The token the driver gets back, so a returned token names exactly one added buffer.
 */
final class RingBuffer {
    enum State { ADDED, POPPED, PUSHED, PUBLISHED, REAPED }

    final long seq;
    final int slot;
    final long[] addr;
    final int[] len;
    final int readable;
    final long readableBytes;
    final long writableBytes;
    State state = State.ADDED;
    /** Taken by the device (from the ring or a recovery) and not yet published: a crash must resubmit it. */
    boolean owed;
    /** Bytes the device said it wrote, once pushed (honest runs). */
    long written = -1;

    RingBuffer(long seq, int slot, ScatterGather sg) {
        this.seq = seq;
        this.slot = slot;
        int n = sg.count();
        addr = new long[n];
        len = new int[n];
        long r = 0;
        long w = 0;
        for (int i = 0; i < n; i++) {
            addr[i] = sg.addr(i);
            len[i] = sg.len(i);
            if (sg.isWritable(i)) {
                w += len[i];
            } else {
                r += len[i];
            }
        }
        readable = sg.readableCount();
        readableBytes = r;
        writableBytes = w;
    }

    /** Fills the readable part with this buffer's pattern and the writable part with noise the device must replace. */
    void fill(MemorySegment guest) {
        long pos = 0;
        for (int i = 0; i < addr.length; i++) {
            for (int b = 0; b < len[i]; b++) {
                byte v = i < readable ? RingHarness.pattern(seq, pos++) : (byte) 0xEE;
                guest.set(ValueLayout.JAVA_BYTE, addr[i] + b, v);
            }
        }
    }

    /** Seed of the pattern the device writes into this buffer (distinct from what the driver wrote). */
    long replySeed() {
        return ~seq;
    }

    /** Whether the first {@code n} bytes of the writable part hold the device's reply pattern. */
    boolean replyIntact(MemorySegment guest, long n) {
        long pos = 0;
        for (int i = readable; i < addr.length && pos < n; i++) {
            for (int b = 0; b < len[i] && pos < n; b++) {
                if (guest.get(ValueLayout.JAVA_BYTE, addr[i] + b) != RingHarness.pattern(replySeed(), pos++)) {
                    return false;
                }
            }
        }
        return true;
    }
}
