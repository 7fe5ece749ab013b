package io.virtio4j.core.driver;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.CountingNotifier;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;

/**
 * A {@link PackedDriverQueue} over a packed ring whose device is played by hand, following virtqueue.md 3.6: the
 * test fetches available lists, writes used descriptors with the ids, lengths and flags it chooses, and writes the
 * device event suppression structure. Indirect tables, when asked for, sit at guest address {@link #TABLES_GUEST}.
 */
final class PackedDeviceByHand implements AutoCloseable {
    static final long TABLES_GUEST = 0x10_0000;
    private static final ValueLayout.OfShort ID = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** One element of a fetched buffer. */
    record Element(long addr, long len, boolean writable) {
    }

    /**
     * A buffer as the device fetched it: its id (from the last descriptor), the ring slots it took, whether it was
     * indirect, its elements.
     */
    record Fetched(int id, int slots, boolean indirect, List<Element> elements) {
    }

    final Arena arena = Arena.ofConfined();
    final int size;
    final PackedRingAreas areas;
    final MemorySegment tables;
    final CountingNotifier kicks = new CountingNotifier();
    final PackedDriverQueue driver;
    private final EventSuppression driverEvent;
    private final EventSuppression deviceEvent;

    /** Device state: next slot to read and its wrap counter, next slot to write used and its wrap counter. */
    int availPos;
    boolean availWrap = true;
    int usedPos;
    boolean usedWrap = true;

    PackedDeviceByHand(int size, DriverOptions options) {
        this(size, options, 0, 0);
    }

    /** With indirect tables of {@code maxElements} entries for buffers of at least {@code threshold} elements. */
    PackedDeviceByHand(int size, DriverOptions options, int maxElements, int threshold) {
        this.size = size;
        MemorySegment ring = RingTestSupport.allocate(arena, PackedRingAreas.contiguousBytes(size));
        // Garbage everywhere: the driver must zero the ring itself, as for a fresh allocation.
        ring.fill((byte) 0x5A);
        this.areas = PackedRingAreas.carve(ring, size);
        DriverOptions o = options;
        if (maxElements > 0) {
            tables = RingTestSupport.allocate(arena, DriverOptions.indirectTablesBytes(size, maxElements));
            o = options.withIndirect(tables, TABLES_GUEST, maxElements, threshold);
        } else {
            tables = null;
        }
        this.driverEvent = new EventSuppression(areas.driverEvent());
        this.deviceEvent = new EventSuppression(areas.deviceEvent());
        this.driver = new PackedDriverQueue(areas, o, kicks);
    }

    int flags(int slot) {
        return PackedDescriptors.flagsAcquire(areas.descRing(), slot);
    }

    /** Whether the device, at its next slot, finds a buffer available. */
    boolean availableNow() {
        return PackedLayout.isAvailable(flags(availPos), availWrap);
    }

    /** Fetches the next available buffer, or null when the next slot is not available. */
    Fetched fetch() {
        if (!availableNow()) {
            return null;
        }
        MemorySegment ring = areas.descRing();
        List<Element> elements = new ArrayList<>();
        int slots = 0;
        while (true) {
            int slot = availPos;
            int f = flags(slot);
            if (!PackedLayout.isAvailable(f, availWrap)) {
                throw new AssertionError("slot " + slot + " of a list is not available: flags 0x" + Integer.toHexString(f));
            }
            slots++;
            if (++availPos == size) {
                availPos = 0;
                availWrap = !availWrap;
            }
            if ((f & DESC_F_INDIRECT) != 0) {
                long off = PackedDescriptors.addr(ring, slot) - TABLES_GUEST;
                int n = (int) (PackedDescriptors.len(ring, slot) / 16);
                for (int i = 0; i < n; i++) {
                    // A packed table entry is a packed descriptor: flags at byte 14, the id (reserved) at 12.
                    if (tables.get(ID, off + 16L * i + 12) != 0) {
                        throw new AssertionError("indirect entry " + i + " has a non-zero id");
                    }
                    elements.add(new Element(PackedDescriptors.indirectAddr(tables, off, i),
                            PackedDescriptors.indirectLen(tables, off, i),
                            (PackedDescriptors.indirectFlags(tables, off, i) & DESC_F_WRITE) != 0));
                }
                return new Fetched(PackedDescriptors.id(ring, slot), slots, true, elements);
            }
            elements.add(new Element(PackedDescriptors.addr(ring, slot), PackedDescriptors.len(ring, slot),
                    (f & DESC_F_WRITE) != 0));
            if ((f & DESC_F_NEXT) == 0) {
                return new Fetched(PackedDescriptors.id(ring, slot), slots, false, elements);
            }
        }
    }

    /** Marks a fetched buffer used with {@code written} bytes (WRITE set when positive), as a device does. */
    void complete(Fetched b, int written) {
        completeAs(b.id(), b.slots(), written);
    }

    /** Writes a used descriptor for {@code id} at the device's used position and advances it by {@code slots}. */
    void completeAs(int id, int slots, int written) {
        writeUsed(usedPos, id, written, PackedLayout.usedBits(usedWrap) | (written > 0 ? DESC_F_WRITE : 0));
        usedPos += slots;
        if (usedPos >= size) {
            usedPos -= size;
            usedWrap = !usedWrap;
        }
    }

    /** Writes any used descriptor at any slot: id and len plainly, then the flags with release. */
    void writeUsed(int slot, int id, int len, int flags) {
        PackedDescriptors.writeUsed(areas.descRing(), slot, id, len);
        PackedDescriptors.flagsRelease(areas.descRing(), slot, flags);
    }

    void deviceEvent(int offWrap, int mode) {
        deviceEvent.release(offWrap, mode);
    }

    int driverEventWord() {
        return driverEvent.wordAcquire();
    }

    int deviceEventWord() {
        return deviceEvent.wordAcquire();
    }

    /** Adds a buffer of {@code readable} then {@code writable} elements, each of {@code len} bytes. */
    void add(Object token, int readable, int writable, int len) {
        ScatterGather sg = new ScatterGather(readable + writable);
        for (int i = 0; i < readable; i++) {
            sg.readable(0x1000L * (i + 1), len);
        }
        for (int i = 0; i < writable; i++) {
            sg.writable(0x8000L + 0x1000L * i, len);
        }
        driver.add(sg, token);
    }

    @Override
    public void close() {
        arena.close();
    }
}
