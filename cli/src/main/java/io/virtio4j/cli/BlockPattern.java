package io.virtio4j.cli;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The self-describing block {@code drive blk --verify} writes and checks: a 40-byte header (a magic, the block's
 * byte offset on the device, the run's id, the block's write generation, a CRC32C) and a payload that follows from
 * the header's fields. A block read back proves where it was meant to be, which run and which write of that run put it
 * there, and that no byte of it changed: a misdirected write, a stale block, a torn or corrupted one each fail a
 * different check.
 *
 * <p>One instance per thread (it holds its CRC32C); {@link #fill} and {@link #check} allocate nothing. They work on a
 * direct {@link ByteBuffer} (the view of a request's data buffer), whose position and limit they change.
 */
final class BlockPattern {
    static final long MAGIC = 0x31304b4c424a3456L; // "V4JBLK01", little-endian
    static final int MAGIC_AT = 0;
    static final int OFFSET_AT = 8;
    static final int RUN_AT = 16;
    static final int GENERATION_AT = 24;
    static final int CRC_AT = 32;
    static final int PAYLOAD_AT = 40;
    /** A generation that matches any: a read-only run checks blocks some earlier run wrote. */
    static final long ANY_GENERATION = -1;

    /** What a block read back is, or is not. */
    enum Verdict {
        OK, BAD_MAGIC, BAD_CRC, WRONG_OFFSET, WRONG_RUN, WRONG_GENERATION
    }

    private final CRC32C crc = new CRC32C();

    /** Writes the block of {@code bytes} bytes at byte {@code offset} of the device, generation {@code generation}. */
    void fill(ByteBuffer b, int bytes, long offset, long run, long generation) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(MAGIC_AT, MAGIC);
        b.putLong(OFFSET_AT, offset);
        b.putLong(RUN_AT, run);
        b.putLong(GENERATION_AT, generation);
        b.putInt(CRC_AT + 4, 0);
        long s = seed(offset, run, generation);
        for (int i = PAYLOAD_AT; i + 8 <= bytes; i += 8) {
            s += 0x9E3779B97F4A7C15L;
            b.putLong(i, mix(s));
        }
        b.putInt(CRC_AT, crcOf(b, bytes));
    }

    /**
     * Checks the block of {@code bytes} bytes read from byte {@code offset}: written by run {@code run} (any run when
     * {@code generation} is {@link #ANY_GENERATION}) as its generation {@code generation}.
     */
    Verdict check(ByteBuffer b, int bytes, long offset, long run, long generation) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        if (b.getLong(MAGIC_AT) != MAGIC) {
            return Verdict.BAD_MAGIC;
        }
        // the CRC first: the fields after it are only worth comparing when they are what was written
        if (b.getInt(CRC_AT) != crcOf(b, bytes)) {
            return Verdict.BAD_CRC;
        }
        if (b.getLong(OFFSET_AT) != offset) {
            return Verdict.WRONG_OFFSET;
        }
        if (generation != ANY_GENERATION && b.getLong(RUN_AT) != run) {
            return Verdict.WRONG_RUN;
        }
        if (generation != ANY_GENERATION && b.getLong(GENERATION_AT) != generation) {
            return Verdict.WRONG_GENERATION;
        }
        // the payload is covered by the CRC, which a writer computed over what it filled; a different payload
        // under a matching CRC would need a writer that computed a CRC over other data: compare it too
        long s = seed(offset, b.getLong(RUN_AT), b.getLong(GENERATION_AT));
        for (int i = PAYLOAD_AT; i + 8 <= bytes; i += 8) {
            s += 0x9E3779B97F4A7C15L;
            if (b.getLong(i) != mix(s)) {
                return Verdict.BAD_CRC;
            }
        }
        return Verdict.OK;
    }

    /** CRC32C of the block without its CRC field. */
    private int crcOf(ByteBuffer b, int bytes) {
        crc.reset();
        b.limit(CRC_AT).position(0);
        crc.update(b);
        b.limit(bytes).position(CRC_AT + 4);
        crc.update(b);
        b.clear();
        return (int) crc.getValue();
    }

    private static long seed(long offset, long run, long generation) {
        return mix(offset ^ mix(run ^ mix(generation)));
    }

    /** SplitMix64's finaliser: every input bit moves about half the output bits. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
