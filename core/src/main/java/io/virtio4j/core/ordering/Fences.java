package io.virtio4j.core.ordering;

import java.lang.invoke.VarHandle;

/**
 * The store-&gt;load fence both ring sides need between publishing their own state (an index, or re-enabled
 * notifications) and reading the other side's suppression state or index. Both {@link Ordering}s take it: no
 * release/acquire pair orders a store before a later load.
 *
 * <p>It is one class of its own, with no switch, so that the memory-model tests (module {@code jcstress}) can
 * run the very same ring code without it: that module builds a fence-omitting class of this name and puts it in
 * front of this one only in its negative-control JVMs. Nothing in this library can turn the fence off.
 *
 * <p>These fences are not {@link Ordering#STRONG}'s extra ones and are not counted in
 * {@link io.virtio4j.core.stats.QueueCounters#strongFences}: they are taken in every mode. What a full fence does
 * and does not order on x86-64 and arm64 is set out in {@link Ordering}.
 */
public final class Fences {
    private Fences() {
    }

    /** A full fence: every store before it is visible before any load after it. */
    public static void storeLoad() {
        VarHandle.fullFence();
    }
}
