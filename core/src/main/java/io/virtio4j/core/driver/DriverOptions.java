package io.virtio4j.core.driver;

import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.feature.VirtioFeatures;

import java.lang.foreign.MemorySegment;

/**
 * Negotiated features and run-time policies of one driver-side queue.
 *
 * @param ordering             barrier strength (STRONG when VIRTIO_F_ORDER_PLATFORM is negotiated)
 * @param eventIdx             VIRTIO_F_EVENT_IDX negotiated: suppression through used_event/avail_event
 * @param indirectTables       memory for indirect tables (one per head descriptor), or null when
 *                             VIRTIO_F_INDIRECT_DESC is not negotiated or not wanted
 * @param indirectTablesGuestAddr guest address of {@code indirectTables}
 * @param indirectMaxElements  elements per indirect table; a longer buffer is chained directly
 * @param indirectThreshold    buffers with at least this many elements go indirect
 * @param publication          when {@code avail.idx} is published
 * @param adaptiveMin          ADAPTIVE: publication interval after a needed kick
 * @param adaptiveMax          ADAPTIVE: largest publication interval
 * @param inOrder              VIRTIO_F_IN_ORDER negotiated: descriptors are made available in ring order and the
 *                             device may return a batch with one used entry for its last buffer
 */
public record DriverOptions(Ordering ordering, boolean eventIdx, MemorySegment indirectTables,
                            long indirectTablesGuestAddr, int indirectMaxElements, int indirectThreshold,
                            AvailPublication publication, int adaptiveMin, int adaptiveMax, boolean inOrder) {

    public DriverOptions {
        if (ordering == null || publication == null) {
            throw new IllegalArgumentException("ordering and publication are required");
        }
        if (adaptiveMin < 1 || adaptiveMax < adaptiveMin) {
            throw new IllegalArgumentException("adaptive interval [" + adaptiveMin + ", " + adaptiveMax + "] is invalid");
        }
        if (indirectTables != null && (indirectMaxElements < 2 || indirectThreshold < 2)) {
            throw new IllegalArgumentException("indirect tables need indirectMaxElements >= 2 and indirectThreshold >= 2");
        }
    }

    /** Weak barriers, event index on, no indirect tables, eager publication. */
    public static DriverOptions defaults() {
        return new DriverOptions(Ordering.WEAK, true, null, 0, 0, 0, AvailPublication.EAGER, 1, 64, false);
    }

    /**
     * These options adjusted to negotiated {@code features}: EVENT_IDX and IN_ORDER as negotiated, indirect tables dropped
     * unless INDIRECT_DESC is negotiated, STRONG ordering forced by VIRTIO_F_ORDER_PLATFORM.
     */
    public DriverOptions forFeatures(long features) {
        boolean indirect = VirtioFeatures.has(features, VirtioFeatures.INDIRECT_DESC) && indirectTables != null;
        return new DriverOptions(VirtioFeatures.ordering(features, ordering),
                VirtioFeatures.has(features, VirtioFeatures.EVENT_IDX), indirect ? indirectTables : null,
                indirect ? indirectTablesGuestAddr : 0, indirect ? indirectMaxElements : 0,
                indirect ? indirectThreshold : 0, publication, adaptiveMin, adaptiveMax,
                VirtioFeatures.has(features, VirtioFeatures.IN_ORDER));
    }

    public DriverOptions withOrdering(Ordering o) {
        return new DriverOptions(o, eventIdx, indirectTables, indirectTablesGuestAddr, indirectMaxElements,
                indirectThreshold, publication, adaptiveMin, adaptiveMax, inOrder);
    }

    public DriverOptions withEventIdx(boolean on) {
        return new DriverOptions(ordering, on, indirectTables, indirectTablesGuestAddr, indirectMaxElements,
                indirectThreshold, publication, adaptiveMin, adaptiveMax, inOrder);
    }

    public DriverOptions withPublication(AvailPublication p) {
        return new DriverOptions(ordering, eventIdx, indirectTables, indirectTablesGuestAddr, indirectMaxElements,
                indirectThreshold, p, adaptiveMin, adaptiveMax, inOrder);
    }

    public DriverOptions withAdaptiveInterval(int min, int max) {
        return new DriverOptions(ordering, eventIdx, indirectTables, indirectTablesGuestAddr, indirectMaxElements,
                indirectThreshold, publication, min, max, inOrder);
    }

    /**
     * Uses indirect tables carved from {@code tables} (guest address {@code guestAddr}): one table of
     * {@code maxElements} descriptors per head, so adding never allocates. Needs
     * {@code queueSize * maxElements * 16} bytes.
     */
    public DriverOptions withIndirect(MemorySegment tables, long guestAddr, int maxElements, int threshold) {
        return new DriverOptions(ordering, eventIdx, tables, guestAddr, maxElements, threshold, publication,
                adaptiveMin, adaptiveMax, inOrder);
    }

    public DriverOptions withInOrder(boolean on) {
        return new DriverOptions(ordering, eventIdx, indirectTables, indirectTablesGuestAddr, indirectMaxElements,
                indirectThreshold, publication, adaptiveMin, adaptiveMax, on);
    }

    /** Bytes of indirect-table memory a queue of {@code queueSize} needs for {@code maxElements} per table. */
    public static long indirectTablesBytes(int queueSize, int maxElements) {
        return (long) queueSize * maxElements * 16;
    }

    /**
     * Checks that the indirect tables, if any, hold one table per entry of a queue of {@code queueSize}.
     *
     * @throws IllegalArgumentException when the segment is too small
     */
    void requireIndirectTablesFor(int queueSize) {
        if (indirectTables != null && indirectTables.byteSize() < indirectTablesBytes(queueSize, indirectMaxElements)) {
            throw new IllegalArgumentException("indirect tables need " + indirectTablesBytes(queueSize, indirectMaxElements)
                    + " bytes, segment has " + indirectTables.byteSize());
        }
    }
}
