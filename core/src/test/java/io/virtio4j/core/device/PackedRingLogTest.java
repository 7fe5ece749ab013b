package io.virtio4j.core.device;

import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.memory.DirtyLog;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.virtio4j.core.device.PackedHostileRing.w;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A packed device queue logging its ring writes: a publication marks the used descriptors' slots at the descriptor
 * ring's log address (both ends when they wrap), a kick switch the device event area at its log address; nothing
 * else; a log too small breaks the queue naming {@code log}. The addresses given are where the front-end says the
 * areas are (pages 4 and 12 here), not where the fixture put them, so a mark at the wrong place shows.
 */
class PackedRingLogTest {
    private static final int QUEUE = 8;
    /** The descriptor ring straddles pages 4 and 5: slots 0..5 in page 4, 6 and 7 in page 5. */
    private static final long DESC_LOG = 5 * DirtyLog.PAGE_SIZE - 6 * PackedLayout.DESC_SIZE;
    private static final long EVENT_LOG = 12 * DirtyLog.PAGE_SIZE + 8;

    private static long marked(MemorySegment raw) {
        return raw.get(ValueLayout.JAVA_SHORT, 0) & 0xFFFFL;
    }

    @Test
    void publicationsMarkTheUsedSlotsAndKickSwitchesTheDeviceEventArea() {
        try (PackedHostileRing ring = new PackedHostileRing(QUEUE, DeviceOptions.defaults());
             Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(8, 8);
            ring.device.logUsed(new DirtyLog(raw, 0, 2), EVENT_LOG, DESC_LOG);
            for (int id = 0; id < 6; id++) {
                ring.add(id, w(PackedHostileRing.DATA + id * 64L, 16));
                ring.device.pushUsed(ring.device.pop().head(), 0);
            }
            ring.device.publishUsed();
            assertEquals(1L << 4, marked(raw), "slots 0..5: page 4 only");
            raw.set(ValueLayout.JAVA_SHORT, 0, (short) 0);
            for (int i = 0; i < 6; i++) {
                ring.reap();
            }
            for (int id = 0; id < 3; id++) { // slots 6, 7, then 0: round the ring
                ring.add(id, w(PackedHostileRing.DATA + id * 64L, 16));
                ring.device.pushUsed(ring.device.pop().head(), 0);
            }
            ring.device.publishUsed();
            assertEquals((1L << 4) | (1L << 5), marked(raw), "slots 6, 7 (page 5) and 0 (page 4)");
            raw.set(ValueLayout.JAVA_SHORT, 0, (short) 0);
            ring.device.enableKicksOrFindPending();
            assertEquals(1L << 12, marked(raw), "the device event area");
            raw.set(ValueLayout.JAVA_SHORT, 0, (short) 0);
            ring.device.disableKicks();
            assertEquals(1L << 12, marked(raw));
        }
    }

    @Test
    void aDescriptorRingPastTheLogBreaksTheQueue() {
        try (PackedHostileRing ring = new PackedHostileRing(QUEUE, DeviceOptions.defaults());
             Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(8, 8);
            ring.device.logUsed(new DirtyLog(raw, 0, 2), EVENT_LOG, 16 * DirtyLog.PAGE_SIZE);
            ring.add(0, w(PackedHostileRing.DATA, 16));
            ring.device.pushUsed(ring.device.pop().head(), 0);
            DirtyLogOverflowException e = assertThrows(DirtyLogOverflowException.class, ring.device::publishUsed);
            assertEquals("log", e.field());
            assertEquals(16, e.value());
            assertTrue(ring.device.isBroken());
            assertInstanceOf(DirtyLogOverflowException.class, ring.device.violation());
        }
    }
}
