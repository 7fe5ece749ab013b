package io.virtio4j.core.layout;

import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.notify.ParkingNotifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A ring and its data in one segment: offsets against hand-computed numbers, the refusals, and a round trip. */
class RingSegmentTest {

    @ParameterizedTest(name = "qsz {0} align {1}")
    @CsvSource({
            // qsz 8: desc 128 + avail 22 = 150, used ring from 192, 70 bytes: 262 bytes of ring
            "8, 1, 262",
            "8, 64, 320",
            "8, 4096, 4096",
            // qsz 256: desc 4096 + avail 518, used ring from 4672, 2054 bytes: 6726
            "256, 64, 6784",
            "256, 4096, 8192",
    })
    void dataStartsAfterTheRingRoundedUpToTheDataAlignment(int qsz, long align, long dataOffset) {
        assertEquals(dataOffset, RingSegment.dataOffset(RingFormat.SPLIT, qsz, align));
        assertEquals(dataOffset + 1000, RingSegment.bytes(RingFormat.SPLIT, qsz, align, 1000));
    }

    @Test
    void carveLaysTheRingAtTheStartAndTheDataAfterIt() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(320 + 256, 64);
            RingSegment ring = RingSegment.carve(seg, RingFormat.SPLIT, 8, 64);
            assertEquals(8, ring.queueSize());
            assertEquals(seg.address(), ((SplitRingAreas) ring.areas()).descTable().address());
            assertEquals(seg.address() + 128, ((SplitRingAreas) ring.areas()).availRing().address());
            assertEquals(seg.address() + 192, ((SplitRingAreas) ring.areas()).usedRing().address());
            assertEquals(320, ring.dataOffset());
            assertEquals(seg.address() + 320, ring.data().address());
            assertEquals(256, ring.data().byteSize());
            // guest address = offset: the data area's first byte is guest address dataOffset
            assertEquals(0, ring.guestMemory().find(320, 256));
            assertEquals(320, ring.guestMemory().offsetIn(0, 320));
        }
    }

    @Test
    void allocateAlignsTheDataAreaInMemory() {
        try (Arena arena = Arena.ofConfined()) {
            RingSegment ring = RingSegment.allocate(arena, RingFormat.SPLIT, 64, 4096, 3 * 4096);
            assertEquals(0, ring.segment().address() % 4096);
            assertEquals(0, ring.data().address() % 4096);
            assertEquals(4096 + 3 * 4096, ring.segment().byteSize());
        }
    }

    @Test
    void anUnalignedSegmentIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(1024, 64);
            assertThrows(IllegalArgumentException.class, () -> RingSegment.carve(seg.asSlice(32), RingFormat.SPLIT, 8, 64));
        }
    }

    @Test
    void aSegmentTooSmallForTheRingIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(1024, 64);
            assertThrows(IllegalArgumentException.class, () -> RingSegment.carve(seg.asSlice(0, 319), RingFormat.SPLIT, 8, 64));
            RingSegment.carve(seg.asSlice(0, 320), RingFormat.SPLIT, 8, 64); // an empty data area is fine
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {-8, 0, 3, 65536})
    void aQueueSizeThatIsNotAPowerOfTwoUpToTheMaximumIsRefused(int queueSize) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RingSegment.dataOffset(RingFormat.SPLIT, queueSize, 64));
        assertTrue(e.getMessage().contains("queue size " + queueSize), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RingSegment.bytes(RingFormat.SPLIT, queueSize, 64, 0));
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -64, 48, 100})
    void aDataAlignmentThatIsNotAPowerOfTwoIsRefused(long align) {
        assertThrows(IllegalArgumentException.class, () -> RingSegment.dataOffset(RingFormat.SPLIT, 8, align));
    }

    @Test
    void aBufferInTheDataAreaGoesRoundThroughTheRealQueues() {
        try (Arena arena = Arena.ofConfined()) {
            RingSegment ring = RingSegment.allocate(arena, RingFormat.SPLIT, 8, 64, 64);
            DriverQueue driver = DriverQueue.over(ring.areas(), DriverOptions.defaults(), new ParkingNotifier());
            DeviceQueue device = DeviceQueue.over(ring.areas(), ring.guestMemory(), DeviceOptions.defaults(),
                    new ParkingNotifier());
            ring.data().set(ValueLayout.JAVA_INT_UNALIGNED, 0, 0x1234_5678);
            driver.add(new ScatterGather(1).readable(ring.dataOffset(), 4), "token");
            driver.kickPrepare();
            var chain = device.pop();
            assertEquals(ring.data().address(), chain.readable(0).address());
            assertEquals(0x1234_5678, chain.readable(0).get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            device.pushUsed(chain.head(), 0);
            device.publishUsed();
            assertEquals("token", driver.pollUsed());
        }
    }
}
