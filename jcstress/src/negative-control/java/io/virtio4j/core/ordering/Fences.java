package io.virtio4j.core.ordering;

/**
 * NEGATIVE CONTROL ONLY: core's {@code io.virtio4j.core.ordering.Fences} with the store-&gt;load fence removed.
 *
 * <p>Compiled by this module's build into {@code target/negative-control-classes}, never into its jar. The
 * harness puts that directory on the boot class path ({@code -Xbootclasspath/a}) of the negative-control forks
 * only: the boot loader is asked before the application class path, so core's unchanged ring classes link to this
 * class there and run without the fence. Same name and public methods as core's (checked by
 * {@code FenceOmittingCopyTest}), so the ring bytecode is the production bytecode.
 */
public final class Fences {
    private Fences() {
    }

    /**
     * Marks this copy: {@code NegativeControl} looks it up by reflection to prove that the JVM it runs in really
     * loaded the fence-omitting {@code Fences} (core's has no such field).
     */
    public static final boolean STORE_LOAD_FENCE_OMITTED = true;

    /** Nothing: the fence this negative control removes. */
    public static void storeLoad() {
    }
}
