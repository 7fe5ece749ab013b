package io.virtio4j.devices.rng;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sources' streams: the seeded one is SplitMix64's published sequence, taken in any cut; a file is cycled. */
class RngSourceTest {
    @TempDir
    Path dir;

    /** The first {@code n} bytes of {@code source}, taken in pieces of {@code cut} bytes. */
    private static byte[] take(RngSource source, int n, int cut) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment all = a.allocate(n);
            MemorySegment piece = a.allocate(cut);
            for (int at = 0; at < n; at += cut) {
                int len = Math.min(cut, n - at);
                source.fill(piece, len);
                MemorySegment.copy(piece, 0, all, at, len);
            }
            return all.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void theSeededStreamIsSplitMix64LittleEndian() {
        // the reference outputs of SplitMix64 from state 1234567 (Vigna's splitmix64.c), unsigned
        long[] reference = {6457827717110365317L, 3203168211198807973L, Long.parseUnsignedLong("9817491932198370423"),
                4593380528125082431L, Long.parseUnsignedLong("16408922859458223821")};
        byte[] got = take(RngSource.seed(1234567), 40, 40);
        MemorySegment s = MemorySegment.ofArray(got);
        for (int i = 0; i < reference.length; i++) {
            assertEquals(reference[i], s.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8L * i), "output " + i);
        }
    }

    @Test
    void theSeededStreamIsTheSameWhateverTheCuts() {
        byte[] whole = take(RngSource.seed(99), 1000, 1000);
        for (int cut : new int[]{1, 3, 7, 8, 9, 64, 333}) {
            assertArrayEquals(whole, take(RngSource.seed(99), 1000, cut), "cut " + cut);
        }
        assertNotEquals(java.util.Arrays.toString(whole), java.util.Arrays.toString(take(RngSource.seed(100), 1000, 1000)));
    }

    @Test
    void aFileIsCycled() throws Exception {
        Path f = dir.resolve("bytes");
        byte[] content = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        Files.write(f, content);
        byte[] got = take(RngSource.file(f), 95, 7);
        for (int i = 0; i < got.length; i++) {
            assertEquals(content[i % content.length], got[i], "byte " + i);
        }
    }

    @Test
    void anEmptyOrMissingFileIsRefusedNamingIt() throws Exception {
        Path empty = Files.createFile(dir.resolve("empty"));
        InvalidRngOptionException e = assertThrows(InvalidRngOptionException.class, () -> RngSource.file(empty));
        assertEquals("source", e.option());
        assertEquals(empty + ": has 0 bytes, not 1 to " + RngSource.MAX_FILE_BYTES, e.getMessage().substring("source=".length()));
        Path missing = dir.resolve("missing");
        InvalidRngOptionException m = assertThrows(InvalidRngOptionException.class, () -> RngSource.file(missing));
        assertEquals(missing, m.value());
    }

    @Test
    void theKernelsBytesAreNotAConstant() {
        RngSource os = RngSource.os();
        // 2^-256 odds that two 32-byte draws agree: a repeat means the bytes are not the kernel's
        assertNotEquals(java.util.Arrays.toString(take(os, 32, 32)), java.util.Arrays.toString(take(os, 32, 32)));
    }

    /**
     * One request of a MiB (and an odd tail), far over the 256 bytes getrandom(2) always gives whole: every 4 KiB block
     * of it is the kernel's, none still holds the pattern written first (a short fill not asked for again keeps it),
     * and the byte after it is untouched.
     */
    @Test
    void theKernelsBytesFillTheWholeRequest() {
        int len = (1 << 20) + 123;
        byte pattern = (byte) 0xA5;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dst = a.allocate(len + 1);
            dst.fill(pattern);
            RngSource.os().fill(dst, len);
            assertEquals(pattern, dst.get(ValueLayout.JAVA_BYTE, len), "the byte after the request");
            for (long block = 0; block < len; block += 4096) {
                long end = Math.min(len, block + 4096);
                long kept = 0;
                for (long i = block; i < end; i++) {
                    kept += dst.get(ValueLayout.JAVA_BYTE, i) == pattern ? 1 : 0;
                }
                // random bytes equal the pattern one time in 256: a block of them all is a block not filled
                assertNotEquals(end - block, kept, "block at " + block + " still holds the pattern");
            }
        }
    }

    @Test
    void aDeviceOrOtherNonRegularFileIsRefusedSayingARegularFileIsNeeded() throws Exception {
        for (Path p : new Path[]{Path.of("/dev/urandom"), dir}) {
            InvalidRngOptionException e = assertThrows(InvalidRngOptionException.class, () -> RngSource.file(p));
            assertEquals("source", e.option());
            assertEquals(p, e.value());
            assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
        }
    }
}
