package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.LinuxException;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.memory.MemoryRegion;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A region is mapped from its mmap_offset rounded down to the fd's page size (the huge page size on hugetlbfs),
 * its length rounded up to it, with MAP_NORESERVE, and its segment is the exact slice; checked in
 * /proc/self/smaps, where the kernel says what was mapped.
 */
class RegionMappingTest {
    private static final long HUGE = 2L << 20;

    /** One mapping as /proc/self/smaps shows it. */
    private record Vma(long start, long end, long fileOffset, List<String> vmFlags) {
    }

    /** The mapping holding {@code address}, from /proc/self/smaps. */
    private static Vma vmaOf(long address) {
        List<String> lines;
        try {
            lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (int i = 0; i < lines.size(); i++) {
            String[] f = lines.get(i).split("\\s+");
            if (f.length < 5 || !f[0].matches("[0-9a-f]+-[0-9a-f]+")) {
                continue;
            }
            String[] range = f[0].split("-");
            long start = Long.parseUnsignedLong(range[0], 16);
            long end = Long.parseUnsignedLong(range[1], 16);
            if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                for (int j = i + 1; j < lines.size(); j++) {
                    if (lines.get(j).startsWith("VmFlags:")) {
                        return new Vma(start, end, Long.parseUnsignedLong(f[2], 16),
                                List.of(lines.get(j).substring("VmFlags:".length()).trim().split("\\s+")));
                    }
                }
            }
        }
        throw new AssertionError("no mapping holds 0x" + Long.toHexString(address));
    }

    private static Message addMemReg(FileDescriptor fd) {
        return new Message(Request.ADD_MEM_REG.code(), ProtocolFeatures.VERSION, MemorySegment.ofArray(new byte[40]),
                new FileDescriptor[] {fd});
    }

    /** The test pattern's byte at file offset {@code o}: differs between neighbouring bytes and pages. */
    private static byte pattern(long o) {
        return (byte) (o * 31 + (o >>> 12) * 7 + (o >>> 21));
    }

    /** Fills the whole file with the pattern, through a mapping of the test's own. */
    private static void fillWithPattern(FileDescriptor fd, long size) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment all = Mmap.mapShared(fd, 0, size, a);
            for (long o = 0; o < size; o++) {
                all.set(ValueLayout.JAVA_BYTE, o, pattern(o));
            }
        }
    }

    /** Maps a region of {@code fd} as ADD_MEM_REG would, checks its bytes and what the kernel mapped. */
    private static void mapsExactly(FileDescriptor fd, long fileSize, long mmapOffset, long size, long page)
            throws VhostUserProtocolException {
        fillWithPattern(fd, fileSize);
        try (MemoryMapper mapper = new MemoryMapper(8)) {
            MemoryRegionDescription d = new MemoryRegionDescription(0x1_0000_0000L, size, 0x7000_0000_0000L, mmapOffset);
            try (MemoryMapper.Change c = mapper.mapAdded(addMemReg(fd), d)) { // closes fd (the caller's close is then a no-op)
                c.install();
            }
            MemoryRegion r = mapper.table().regions().getFirst();
            assertEquals(size, r.data().byteSize(), "the region's segment is exactly its size");
            for (long i = 0; i < size; i++) {
                if (r.data().get(ValueLayout.JAVA_BYTE, i) != pattern(mmapOffset + i)) {
                    throw new AssertionError("region byte " + i + " is not the file's byte at mmap_offset + " + i);
                }
            }
            Vma vma = vmaOf(r.data().address());
            long lead = mmapOffset % page;
            assertEquals(mmapOffset - lead, vma.fileOffset(), "mapped from mmap_offset rounded down to the page " + page);
            assertEquals(r.data().address() - lead, vma.start(), "the segment starts mmap_offset's lead into the mapping");
            assertEquals((lead + size + page - 1) / page * page, vma.end() - vma.start(),
                    "mapped length: the region's pages, rounded up to " + page);
            assertTrue(vma.vmFlags().contains("nr"), "MAP_NORESERVE (VmFlags nr): " + vma.vmFlags());
        }
    }

    @Test
    void aRegionAtAnUnalignedOffsetOfAMemfdMapsOnlyItsOwnPages() throws Exception {
        long fileSize = 16 * Mmap.pageSize();
        try (FileDescriptor fd = Memfd.create("region-mapping", fileSize)) {
            assertEquals(Mmap.pageSize(), Mmap.filePageSize(fd));
            mapsExactly(fd, fileSize, 3 * Mmap.pageSize() + 104, 5000, Mmap.pageSize());
        }
    }

    @Test
    void aRegionOfAHugetlbMemfdMapsWholeHugePagesFromItsOwn() throws Exception {
        long fileSize = 3 * HUGE;
        FileDescriptor fd = Memfd.createHugetlb("region-mapping-huge", fileSize);
        try (fd) {
            try (Arena a = Arena.ofConfined()) {
                Mmap.mapShared(fd, 0, fileSize, a); // reserves the pages: fails at once when the pool is too small
            } catch (LinuxException e) {
                assumeTrue(false, "no " + fileSize / HUGE + " free 2 MiB huge pages (peers/install.sh hugepages sets "
                        + "them up): " + e.getMessage());
            }
            assertEquals(HUGE, Mmap.filePageSize(fd), "st_blksize of a hugetlb memfd is its huge page size");
            // offset and length inside the second huge page: the mapping must start at it and be one huge page long
            mapsExactly(fd, fileSize, HUGE + 4096 + 8, 3 * 4096, HUGE);
        }
    }
}
