package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.CountingNotifier;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.memory.GuestMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A packed used descriptor reporting 2 GiB or more written: its length is an unsigned 32-bit value, negative as a
 * Java int, and must still carry the WRITE flag, or the driver ignores the length and takes nothing as written.
 * Guest memory that large is a sparse file mapped in one segment; only the ring's page is touched.
 */
class PackedLargeLengthTest {
    private static final int QUEUE = 4;
    private static final long DATA = 64 * 1024;
    private static final long GUEST_BYTES = DATA + (1L << 32);

    private Path file;
    private Arena arena;
    private PackedRingAreas areas;

    @BeforeEach
    void map() throws IOException {
        file = Files.createTempFile("virtio4j-sparse", ".mem");
        arena = Arena.ofConfined();
        MemorySegment memory;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            memory = ch.map(FileChannel.MapMode.READ_WRITE, 0, GUEST_BYTES, arena);
        }
        areas = PackedRingAreas.carve(memory.asSlice(0, DATA), QUEUE);
        guest = GuestMemory.of(memory, 0);
    }

    private GuestMemory guest;

    @AfterEach
    void unmap() throws IOException {
        arena.close();
        Files.deleteIfExists(file);
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void twoGibibytesWrittenKeepTheWriteFlag(boolean inOrder) {
        DeviceQueue device = DeviceQueue.over(areas, guest, DeviceOptions.defaults().withInOrder(inOrder),
                new CountingNotifier());
        long written = 0xFFFF_FFF0L; // above 2^31: negative as an int
        PackedDescriptors.write(areas.descRing(), 0, DATA, (int) written, 2);
        PackedDescriptors.flagsRelease(areas.descRing(), 0, PackedLayout.DESC_F_WRITE | PackedLayout.availBits(true));
        DescriptorChain c = device.pop();
        assertNotNull(c);
        assertEquals(written, c.writableBytes());
        device.pushUsed(c.head(), written);
        device.flushUsed();
        int flags = PackedDescriptors.flagsAcquire(areas.descRing(), 0);
        assertEquals(PackedLayout.usedBits(true) | PackedLayout.DESC_F_WRITE, flags, "used flags 0x" + Integer.toHexString(flags));
        assertEquals(written, PackedDescriptors.len(areas.descRing(), 0));
        assertEquals(2, PackedDescriptors.id(areas.descRing(), 0));
    }
}
