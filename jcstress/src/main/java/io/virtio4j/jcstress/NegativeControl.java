package io.virtio4j.jcstress;

import io.virtio4j.core.ordering.Fences;

/**
 * Guard for the negative-control tests ({@code *NegativeControl}): they are meaningful only in a JVM where
 * {@link Fences#OMIT_PROPERTY} removed the store-&gt;load fence from the ring code. Run anywhere else they would
 * pass vacuously, so their state constructors refuse, and jcstress reports the test as an error.
 */
public final class NegativeControl {
    private NegativeControl() {
    }

    /** Token that proves the check ran; throws when the fence is still in place. */
    public enum Checked { YES }

    public static Checked require() {
        if (!Fences.omitted()) {
            throw new IllegalStateException("negative-control test run with the store->load fence in place; run it with -D"
                    + Fences.OMIT_PROPERTY + "=true (the harness's negative-control suite does)");
        }
        return Checked.YES;
    }
}
