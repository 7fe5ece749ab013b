package io.virtio4j.jcstress;

import io.virtio4j.core.ordering.Fences;

/**
 * Guard for the negative-control tests ({@code *NegativeControl}): they are meaningful only in a JVM that loaded
 * this module's fence-omitting {@link Fences} (from {@code target/negative-control-classes}, put on the boot class
 * path by the harness's negative-control suite) instead of core's. Run anywhere else they would pass vacuously,
 * so their state constructors refuse, and jcstress reports the test as an error.
 */
public final class NegativeControl {
    private NegativeControl() {
    }

    /** The field only the fence-omitting copy of {@link Fences} declares. */
    static final String MARKER = "STORE_LOAD_FENCE_OMITTED";

    /** Token that proves the check ran; throws when the fence is still in place. */
    public enum Checked { YES }

    public static Checked require() {
        if (!fenceOmitted()) {
            throw new IllegalStateException("negative-control test run with core's store->load fence in place; the"
                    + " harness's negative-control suite runs it with the fence-omitting Fences on the boot class path");
        }
        return Checked.YES;
    }

    /** Whether the {@link Fences} this JVM links the ring code to is the fence-omitting copy. */
    public static boolean fenceOmitted() {
        try {
            Fences.class.getField(MARKER);
            return true;
        } catch (NoSuchFieldException coreFences) {
            return false;
        }
    }
}
