package io.virtio4j.devices.rng;

import io.virtio4j.os.GetRandom;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Where a virtio-rng device's bytes come from: one stream, taken in order by the device's queue thread (one thread
 * at a time: a connection's runner hands over to the next through the device's lifecycle). Two are deterministic,
 * for tests that check what a guest read: {@link #file} and {@link #seed}.
 */
public sealed interface RngSource {
    /** Writes the next {@code len} bytes of the stream into {@code dst} (native) from offset 0. */
    void fill(MemorySegment dst, long len);

    /** The largest file {@link #file} takes: it is read into memory once. */
    long MAX_FILE_BYTES = 256L << 20;

    /** The kernel's random bytes (getrandom(2), the source of /dev/urandom). */
    static RngSource os() {
        return new Os(new GetRandom());
    }

    /**
     * The bytes of {@code file}, a regular file of 1 to {@link #MAX_FILE_BYTES} bytes, from its start, over and over.
     * A device (/dev/urandom, /dev/hwrng) is refused: it has no size to read once, and {@link #os} is the kernel's
     * random bytes already.
     */
    static RngSource file(Path file) {
        try {
            if (Files.exists(file) && !Files.isRegularFile(file)) {
                throw new InvalidRngOptionException("source", file, "not a regular file (a device such as /dev/urandom is"
                        + " refused: without a source the kernel's random bytes are served)");
            }
            long size = Files.size(file);
            if (size == 0 || size > MAX_FILE_BYTES) {
                throw new InvalidRngOptionException("source", file, "has " + size + " bytes, not 1 to " + MAX_FILE_BYTES);
            }
            return new Cycled(MemorySegment.ofArray(Files.readAllBytes(file)));
        } catch (NoSuchFileException e) {
            throw new InvalidRngOptionException("source", file, "no such file");
        } catch (IOException e) {
            throw new InvalidRngOptionException("source", file, "cannot be read: " + e);
        }
    }

    /**
     * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) from state
     * {@code seed}: each step adds 0x9E3779B97F4A7C15 to the state and mixes it, z = (z ^ z >>> 30) *
     * 0xBF58476D1CE4E5B9, z = (z ^ z >>> 27) * 0x94D049BB133111EB, z ^ z >>> 31; each 64-bit output is 8 bytes of the
     * stream, little-endian. Any language can reproduce it in a few lines.
     */
    static RngSource seed(long seed) {
        return new SplitMix64(seed);
    }
}

/** The kernel's bytes. */
record Os(GetRandom getRandom) implements RngSource {
    @Override
    public void fill(MemorySegment dst, long len) {
        getRandom.fill(dst, len);
    }
}

/** A file's bytes, over and over. */
final class Cycled implements RngSource {
    private final MemorySegment bytes;
    private long at;

    Cycled(MemorySegment bytes) {
        this.bytes = bytes;
    }

    @Override
    public void fill(MemorySegment dst, long len) {
        for (long done = 0; done < len; ) {
            long n = Math.min(len - done, bytes.byteSize() - at);
            MemorySegment.copy(bytes, at, dst, done, n);
            done += n;
            at = (at + n) % bytes.byteSize();
        }
    }
}

/** SplitMix64, as {@link RngSource#seed} documents it. */
final class SplitMix64 implements RngSource {
    private static final ValueLayout.OfLong LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    /** The golden gamma, SplitMix64's increment. */
    private static final long GAMMA = 0x9E3779B97F4A7C15L;
    private long state;
    /** The current output's bytes not yet given out, low first. */
    private long word;
    private int left;

    SplitMix64(long seed) {
        this.state = seed;
    }

    @Override
    public void fill(MemorySegment dst, long len) {
        long i = 0;
        for (; i < len && left > 0; i++, left--, word >>>= 8) {
            dst.set(ValueLayout.JAVA_BYTE, i, (byte) word);
        }
        for (; i + 8 <= len; i += 8) {
            dst.set(LE, i, mix(state += GAMMA));
        }
        if (i < len) {
            word = mix(state += GAMMA);
            left = 8;
            for (; i < len; i++, left--, word >>>= 8) {
                dst.set(ValueLayout.JAVA_BYTE, i, (byte) word);
            }
        }
    }

    /** SplitMix64's output for {@code state} (the caller advances the state by the golden gamma first). */
    private static long mix(long state) {
        long z = (state ^ (state >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
