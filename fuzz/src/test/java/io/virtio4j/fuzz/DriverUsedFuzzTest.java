package io.virtio4j.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.virtio4j.core.layout.RingFormat;

import java.lang.foreign.ValueLayout;

/**
 * Fuzz target {@code driver-used} (b): the driver's used-ring reader of both ring formats against a hostile device.
 * The input picks the ring's shape, then a program of honest steps ({@link RingProgram}: the driver adds and reaps,
 * an honest device pops and completes) mixed with what a hostile device writes where the driver reads: forged used
 * entries (split: {@code used.ring[i]} id and length, {@code used.idx}; packed: a descriptor's id, length and
 * used flags) and raw bytes anywhere in the device's areas; and, for split rings, a device that goes away and a new
 * one that resumes after {@link io.virtio4j.core.driver.DriverQueue#reofferInFlight()}.
 *
 * <p>Invariants: the driver reaps only buffers it added, each once, never longer than their writable part, or
 * refuses with a named {@link io.virtio4j.core.error.RingViolationException} that breaks it; nothing else is thrown.
 * At the end the driver takes back what it still owns: every buffer has then come back exactly once, reaped or
 * detached, unless the driver broke. Without forged writes (reconnects included) every buffer comes back reaped,
 * with the device's length and bytes.
 */
class DriverUsedFuzzTest {
    private static final int FORGE_ENTRY = RingProgram.COMMON_OPS;
    private static final int FORGE_INDEX = RingProgram.COMMON_OPS + 1;
    private static final int SCRIBBLE = RingProgram.COMMON_OPS + 2;
    private static final int RECONNECT = RingProgram.COMMON_OPS + 3;

    @FuzzTest(maxDuration = "10s")
    void reap(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try (RingHarness h = new RingHarness(in)) {
            RingProgram p = new RingProgram(h, in);
            while (p.more()) {
                int op = in.u8() % (RingProgram.COMMON_OPS + 4);
                switch (op) {
                    case FORGE_ENTRY -> {
                        p.hostile();
                        forgeEntry(h, in);
                    }
                    case FORGE_INDEX -> {
                        p.hostile();
                        forgeIndex(h, in);
                    }
                    case SCRIBBLE -> {
                        p.hostile();
                        h.scribble(in, h.deviceAreas());
                    }
                    case RECONNECT -> p.reconnect();
                    default -> p.step(op);
                }
            }
            p.drain();
            p.detachAll();
        }
    }

    /** An id the driver may know (mostly below the queue size, sometimes anything). */
    private static int forgedId(RingHarness h, FuzzInput in) {
        int pick = in.u8();
        return pick < 224 ? pick % (h.size + 1) : in.u16();
    }

    /** A used length: mostly small, sometimes any 32-bit value. */
    private static int forgedLength(FuzzInput in) {
        int pick = in.u8();
        return pick < 192 ? pick : in.u32();
    }

    /** Split: {@code used.ring[slot] = {id, len}}. Packed: descriptor {@code slot} gets an id, a length and flags. */
    private static void forgeEntry(RingHarness h, FuzzInput in) {
        int slot = in.below(h.size);
        int id = forgedId(h, in);
        int len = forgedLength(in);
        long area = h.deviceAreas()[0][0];
        if (h.format == RingFormat.SPLIT) {
            long e = area + 4 + 8L * slot;
            h.guest.set(ValueLayout.JAVA_INT_UNALIGNED, e, id);
            h.guest.set(ValueLayout.JAVA_INT_UNALIGNED, e + 4, len);
        } else {
            long d = area + 16L * slot;
            int flags = switch (in.below(4)) {
                case 0 -> 0x8080;          // AVAIL and USED both 1: used in wrap 1
                case 1 -> 0x0000;          // both 0: used in wrap 0
                case 2 -> 0x8080 | (in.u8() & 0x7); // with NEXT, WRITE or INDIRECT bits besides
                default -> in.u16();
            };
            h.guest.set(ValueLayout.JAVA_INT_UNALIGNED, d + 8, len);
            h.guest.set(ValueLayout.JAVA_SHORT_UNALIGNED, d + 12, (short) id);
            h.guest.set(ValueLayout.JAVA_SHORT_UNALIGNED, d + 14, (short) flags);
        }
    }

    /** Split: moves {@code used.idx} by a few entries or to any value. Packed: forges the entry at a slot instead. */
    private static void forgeIndex(RingHarness h, FuzzInput in) {
        if (h.format != RingFormat.SPLIT) {
            forgeEntry(h, in);
            return;
        }
        long idxAt = h.deviceAreas()[0][0] + 2;
        int now = Short.toUnsignedInt(h.guest.get(ValueLayout.JAVA_SHORT_UNALIGNED, idxAt));
        int pick = in.u8();
        int idx = pick < 224 ? now + pick % (h.size + 2) : in.u16();
        h.guest.set(ValueLayout.JAVA_SHORT_UNALIGNED, idxAt, (short) idx);
    }
}
