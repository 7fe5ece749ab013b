package io.virtio4j.fuzz;

/**
 * The fuzzer's bytes read front to back as the operands of an action grammar, so that a hand-made seed is a
 * readable byte string (one opcode byte, then its operands) and a mutation of one byte changes one decision.
 * Past the end every read answers 0: a short input is a short program, never an error.
 */
public final class FuzzInput {
    private final byte[] data;
    private int pos;

    public FuzzInput(byte[] data) {
        this.data = data;
    }

    public boolean hasMore() {
        return pos < data.length;
    }

    public int remaining() {
        return data.length - pos;
    }

    public int u8() {
        return pos < data.length ? data[pos++] & 0xFF : 0;
    }

    public int u16() {
        return u8() | u8() << 8;
    }

    public int u32() {
        return u16() | u16() << 16;
    }

    public long u64() {
        return (u32() & 0xFFFF_FFFFL) | (long) u32() << 32;
    }

    public boolean bool() {
        return (u8() & 1) != 0;
    }

    /** A value in [0, bound): {@code bound} must be positive. */
    public int below(int bound) {
        return bound <= 256 ? u8() % bound : (u16() & 0x7FFF) % bound;
    }

    /** Up to {@code max} bytes, as many as are left if fewer. */
    public byte[] bytes(int max) {
        int n = Math.min(max, data.length - pos);
        byte[] b = java.util.Arrays.copyOfRange(data, pos, pos + n);
        pos += n;
        return b;
    }
}
