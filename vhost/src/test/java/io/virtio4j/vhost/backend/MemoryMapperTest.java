package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** What the mapper mapped for a change that fails is unmapped at once, not left for the life of the process. */
class MemoryMapperTest {
    private static final long MEM = 64 * 1024;

    /** Mappings of this process whose file is the memfd named {@code name}. */
    static long mappingsOf(String name) {
        try {
            return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.contains("/memfd:" + name + " ")).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A failure after the region is mapped (here the guest memory refusing a region that wraps 2^64: decoding a
     * front-end's message never lets one through, so this description is made by hand) unmaps it again.
     */
    @Test
    void anAddedRegionThatFailsAfterItsMappingIsUnmapped() {
        String name = "mapper-probe-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (MemoryMapper mapper = new MemoryMapper(8); FileDescriptor mem = Memfd.create(name, MEM)) {
            Message m = new Message(Request.ADD_MEM_REG.code(), ProtocolFeatures.VERSION, MemorySegment.ofArray(new byte[40]),
                    new FileDescriptor[] {mem});
            MemoryRegionDescription wrapping = new MemoryRegionDescription(-4096, MEM, 0x7000_0000_0000L, 0);
            assertThrows(IllegalArgumentException.class, () -> mapper.mapAdded(m, wrapping));
            assertEquals(0, mappingsOf(name), "the region's mapping outlived the failed change");
        }
    }
}
