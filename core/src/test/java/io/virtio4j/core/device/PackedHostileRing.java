package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport;
import io.virtio4j.core.RingTestSupport.CountingNotifier;
import io.virtio4j.core.layout.EventSuppression;
import io.virtio4j.core.layout.PackedDescriptors;
import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.memory.GuestMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static io.virtio4j.core.layout.PackedLayout.DESC_F_INDIRECT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_NEXT;
import static io.virtio4j.core.layout.PackedLayout.DESC_F_WRITE;
import static io.virtio4j.core.layout.PackedLayout.DESC_SIZE;

/**
 * A packed device queue alone over a ring that the test writes, playing the driver (correct or hostile). The
 * guest memory ({@link #GUEST_BYTES}, ring areas at guest address 0) sits between two canary zones of a larger
 * segment, so any access outside it would show. The fixture keeps a driver's positions and wrap counters, so
 * {@link #add} makes buffers available with the right AVAIL/USED bits (first descriptor last, with release), and
 * {@link #reap} reads used descriptors back as a driver does, advancing by the slots each id took.
 */
final class PackedHostileRing implements AutoCloseable {
    static final long GUEST_BYTES = 64 * 1024;
    static final long CANARY_BYTES = 4096;
    static final byte CANARY = (byte) 0xA5;
    /** Guest address of a data area for buffer elements. */
    static final long DATA = 16 * 1024;
    /** Guest address of an area for indirect tables. */
    static final long TABLES = 48 * 1024;

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** One element of a buffer: guest address, length, device-writable or not. */
    record Elem(long addr, int len, boolean writable) {
    }

    static Elem r(long addr, int len) {
        return new Elem(addr, len, false);
    }

    static Elem w(long addr, int len) {
        return new Elem(addr, len, true);
    }

    /** A used descriptor as the driver reads it. */
    record Used(int id, int len, int flags) {
    }

    final Arena arena;
    final MemorySegment outer;
    /** The guest memory; guest address = offset. */
    final MemorySegment memory;
    final GuestMemory guest;
    final PackedRingAreas areas;
    final EventSuppression driverEvent;
    final EventSuppression deviceEvent;
    final CountingNotifier calls = new CountingNotifier();
    final PackedDeviceQueue device;
    final int size;

    /** The driver's positions and wrap counters, and the slots of each id it made available. */
    private int availPos;
    private boolean availWrap = true;
    private int usedPos;
    private boolean usedWrap = true;
    private final int[] slotsOf;
    private int outstanding;

    PackedHostileRing(int queueSize, DeviceOptions options) {
        if (PackedRingAreas.contiguousBytes(queueSize) > DATA) {
            throw new IllegalArgumentException("queue size " + queueSize + " too large for this fixture");
        }
        size = queueSize;
        arena = Arena.ofConfined();
        outer = RingTestSupport.allocate(arena, CANARY_BYTES + GUEST_BYTES + CANARY_BYTES);
        outer.asSlice(0, CANARY_BYTES).fill(CANARY);
        outer.asSlice(CANARY_BYTES + GUEST_BYTES).fill(CANARY);
        memory = outer.asSlice(CANARY_BYTES, GUEST_BYTES);
        guest = GuestMemory.of(memory, 0);
        areas = PackedRingAreas.carve(memory, queueSize);
        driverEvent = new EventSuppression(areas.driverEvent());
        deviceEvent = new EventSuppression(areas.deviceEvent());
        device = new PackedDeviceQueue(areas, guest, options, calls);
        slotsOf = new int[65536];
    }

    // ---- raw access, for forging ----

    /** Writes addr, len and id of ring slot {@code slot}, leaving its flags. */
    void desc(int slot, long addr, int len, int id) {
        PackedDescriptors.write(areas.descRing(), slot, addr, len, id);
    }

    /** Stores the flags of ring slot {@code slot} with release, as a driver publishing a head does. */
    void flags(int slot, int flags) {
        PackedDescriptors.flagsRelease(areas.descRing(), slot, flags);
    }

    int flagsAt(int slot) {
        return PackedDescriptors.flagsAcquire(areas.descRing(), slot);
    }

    /** Writes entry {@code index} of a packed indirect table at guest address {@code table} (id left 0). */
    void indirect(long table, int index, long addr, int len, int flags) {
        long off = table + (long) DESC_SIZE * index;
        memory.set(U64, off, addr);
        memory.set(U32, off + 8, len);
        memory.set(U16, off + 12, (short) 0);
        memory.set(U16, off + 14, (short) flags);
    }

    /** The driver's next available slot and wrap counter. */
    int availPos() {
        return availPos;
    }

    boolean availWrap() {
        return availWrap;
    }

    /** The AVAIL/USED bits the driver would write at its {@code k}-th slot from its next one. */
    int availBitsAt(int k) {
        boolean wrap = availWrap ^ (((availPos + k) / size) % 2 == 1);
        return PackedLayout.availBits(wrap);
    }

    int slotAt(int k) {
        return (availPos + k) % size;
    }

    /** Moves the driver's available position by {@code n} slots (after forging them by hand). */
    void skip(int n, int id) {
        for (int i = 0; i < n; i++) {
            if (++availPos == size) {
                availPos = 0;
                availWrap = !availWrap;
            }
        }
        slotsOf[id] = n;
        outstanding += n;
    }

    // ---- a correct driver ----

    /** Free slots as the driver counts them: the ring less what it made available and has not reaped. */
    int freeSlots() {
        return size - outstanding;
    }

    /** Makes a direct list available under {@code id}: later descriptors first, the first one last, with release. */
    int add(int id, Elem... elems) {
        int head = availPos;
        int headFlags = 0;
        for (int i = 0; i < elems.length; i++) {
            Elem e = elems[i];
            int flags = (e.writable() ? DESC_F_WRITE : 0) | (i < elems.length - 1 ? DESC_F_NEXT : 0) | availBitsAt(i);
            desc(slotAt(i), e.addr(), e.len(), i == elems.length - 1 ? id : 0xFFFF);
            if (i == 0) {
                headFlags = flags;
            } else {
                PackedDescriptors.flagsPlain(areas.descRing(), slotAt(i), flags);
            }
        }
        flags(head, headFlags);
        skip(elems.length, id);
        return head;
    }

    /** Makes an indirect buffer available under {@code id}: a table at guest address {@code table}. */
    int addIndirect(int id, long table, Elem... elems) {
        for (int i = 0; i < elems.length; i++) {
            indirect(table, i, elems[i].addr(), elems[i].len(), elems[i].writable() ? DESC_F_WRITE : 0);
        }
        int head = availPos;
        desc(head, table, elems.length * DESC_SIZE, id);
        flags(head, DESC_F_INDIRECT | availBitsAt(0));
        skip(1, id);
        return head;
    }

    /**
     * Reads the used descriptor at the driver's next used slot with acquire, or null when it is not used yet;
     * advances by the slots its id took. Ids skipped under IN_ORDER must be released by the caller.
     */
    Used reap() {
        int flags = flagsAt(usedPos);
        if (!PackedLayout.isUsed(flags, usedWrap)) {
            return null;
        }
        MemorySegment ring = areas.descRing();
        Used u = new Used(PackedDescriptors.id(ring, usedPos), (int) PackedDescriptors.len(ring, usedPos), flags);
        advanceUsed(slotsOf[u.id()]);
        return u;
    }

    /** Advances the driver's used position by {@code n} slots (buffers an IN_ORDER entry skipped). */
    void advanceUsed(int n) {
        outstanding -= n;
        usedPos += n;
        if (usedPos >= size) {
            usedPos -= size;
            usedWrap = !usedWrap;
        }
    }

    int slotsOf(int id) {
        return slotsOf[id];
    }

    int usedPos() {
        return usedPos;
    }

    boolean usedWrap() {
        return usedWrap;
    }

    /** One buffer through the whole cycle: add, pop, push, flush, reap; checks the data came through. */
    void roundTrip(int id) {
        memory.set(U64, DATA, 0x1234_5678_9ABCL + id);
        add(id, r(DATA, 8), w(DATA + 64, 8));
        DescriptorChain c = device.pop();
        if (c == null || c.head() != id || c.readable(0).get(U64, 0) != 0x1234_5678_9ABCL + id) {
            throw new AssertionError("healthy ring did not pop buffer " + id);
        }
        c.writable(0).set(U64, 0, ~(0x1234_5678_9ABCL + id));
        device.pushUsed(id, 8);
        device.flushUsed();
        Used u = reap();
        if (u == null || u.id() != id || u.len() != 8 || memory.get(U64, DATA + 64) != ~(0x1234_5678_9ABCL + id)) {
            throw new AssertionError("healthy ring did not give back buffer " + id + ": " + u);
        }
    }

    /** Whether the bytes just below and just above the guest memory still hold the canary pattern. */
    boolean canariesIntact() {
        for (long i = 0; i < outer.byteSize(); i++) {
            if ((i < CANARY_BYTES || i >= CANARY_BYTES + GUEST_BYTES) && outer.get(ValueLayout.JAVA_BYTE, i) != CANARY) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void close() {
        arena.close();
    }
}
