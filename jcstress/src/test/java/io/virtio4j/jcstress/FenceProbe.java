package io.virtio4j.jcstress;

/** Child JVM of {@link FenceOmittingCopyTest}: says which {@code Fences} the ring code links to there. */
public final class FenceProbe {
    private FenceProbe() {
    }

    public static void main(String[] args) {
        System.out.println("fenceOmitted=" + NegativeControl.fenceOmitted());
    }
}
