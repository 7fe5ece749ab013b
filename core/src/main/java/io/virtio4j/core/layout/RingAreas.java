package io.virtio4j.core.layout;

/** The memory areas of one virtqueue, in either format: what a driver or device queue is built over. */
public sealed interface RingAreas permits SplitRingAreas, PackedRingAreas {
    int queueSize();

    RingFormat format();
}
