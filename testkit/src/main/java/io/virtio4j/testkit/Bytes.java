package io.virtio4j.testkit;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.zip.CRC32;

/** Test data and its checksums: the bytes a test writes, and how it proves they came back intact. */
public final class Bytes {
    private Bytes() {
    }

    /** {@code n} pseudo-random bytes, the same for the same {@code seed}. */
    public static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** The CRC-32 of {@code b}. */
    public static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }

    /** The CRC-32 of all of {@code s}. */
    public static long crc(MemorySegment s) {
        CRC32 c = new CRC32();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    /** The CRC-32 of {@code length} bytes of {@code s} at {@code offset}. */
    public static long crc(MemorySegment s, long offset, long length) {
        return crc(s.asSlice(offset, length));
    }
}
