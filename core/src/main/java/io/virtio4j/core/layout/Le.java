package io.virtio4j.core.layout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Little-endian value layouts and their var handles, shared by the ring flyweights. */
final class Le {
    private Le() {
    }

    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** U64 without an alignment constraint: descriptor addresses inside guest-chosen indirect tables. */
    static final ValueLayout.OfLong U64_UNALIGNED = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt U32_UNALIGNED = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort U16_UNALIGNED = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Coordinates (MemorySegment, long offset). Used for acquire loads of indices and flags; release stores go
     * through {@link #setU16Release} instead.
     */
    static final VarHandle U16_VH = U16.varHandle();

    /**
     * Stores a 16-bit index or flags field with release semantics: every load and store before it is ordered before
     * it (the ring entries, descriptors and payload a publication covers). Written as a release fence and a plain
     * store (single-copy atomic for an aligned short), which is what setRelease does on x86-64 and close to it on
     * aarch64 (dmb ish then strh, for stlrh), rather than {@code U16_VH.setRelease}: on JDK 25 a fault in an
     * interpreted 8- or 16-bit setRelease, setVolatile or setOpaque (Unsafe.putShortVolatile running in the VM)
     * crashes the JVM in its SIGBUS handler (Assembler::locate_operand, ShouldNotReachHere) where every other
     * access raises the InternalError a queue thread survives. Guest memory can fault: a front-end may shrink the
     * file under a mapped region. Checked on Temurin 25.0.3, x86-64, with a truncated memfd; 32- and 64-bit release
     * and volatile stores, and compiled code of every width, were fine.
     */
    static void setU16Release(MemorySegment seg, long offset, int value) {
        VarHandle.releaseFence();
        seg.set(U16, offset, (short) value);
    }
}
