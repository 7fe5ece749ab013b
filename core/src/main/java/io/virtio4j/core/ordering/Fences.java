package io.virtio4j.core.ordering;

import java.lang.invoke.VarHandle;

/**
 * The store-&gt;load fence both ring sides need before reading the other side's suppression state or index.
 *
 * <p>It is one method so that the memory-model tests (module {@code jcstress}) can run the very same ring code
 * paths with the fence removed, as a negative control that must show the lost-notification outcome. The
 * switch is the system property {@value #OMIT_PROPERTY}, read once at class initialisation into a
 * {@code static final}, so the JIT folds the test and production code pays nothing for it. Never set it
 * outside that negative control: a ring without this fence loses notifications.
 */
public final class Fences {
    private Fences() {
    }

    public static final String OMIT_PROPERTY = "virtio4j.negativeControl.omitStoreLoadFence";

    private static final boolean OMIT = Boolean.getBoolean(OMIT_PROPERTY);

    /** A full fence: every store before it is visible before any load after it. */
    public static void storeLoad() {
        if (!OMIT) {
            VarHandle.fullFence();
        }
    }

    /** Whether this JVM runs the negative control (store-&gt;load fence removed). */
    public static boolean omitted() {
        return OMIT;
    }
}
