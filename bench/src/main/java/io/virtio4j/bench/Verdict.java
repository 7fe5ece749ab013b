package io.virtio4j.bench;

/**
 * What the data can say about a claim, from the 95% interval of B/A, the side of 1 the claim predicts and the
 * claimed ratio itself.
 */
public enum Verdict {
    /** The interval lies entirely on the side of 1 the claim predicts. */
    REPRODUCED("reproduced"),
    /** The interval lies entirely on the other side of 1. */
    OPPOSITE("opposite"),
    /**
     * The interval contains 1 but excludes the claimed ratio: whatever the effect is here, it is smaller than
     * claimed (the data can tell, it is no matter of too few pairs).
     */
    REFUTED("refuted"),
    /**
     * The interval contains both 1 and the claimed ratio (or the claim names no ratio): too wide to decide; the
     * half-width reached says how far the measurement got.
     */
    INCONCLUSIVE("inconclusive"),
    /** Not measured (placeholder or no interval). */
    NOT_MEASURED("not measured");

    private final String text;

    Verdict(String text) {
        this.text = text;
    }

    public String text() {
        return text;
    }

    /**
     * @param expectsIncrease true when the claim predicts B/A &gt; 1
     * @param claimedRatio    the claimed B/A, or NaN when the claim gives only a direction
     */
    public static Verdict of(PairedRatio r, boolean expectsIncrease, double claimedRatio) {
        if (!r.hasInterval()) {
            return NOT_MEASURED;
        }
        if (r.ciLow() > 1 || r.ciHigh() < 1) {
            return (r.ciLow() > 1) == expectsIncrease ? REPRODUCED : OPPOSITE;
        }
        if (!Double.isNaN(claimedRatio) && !r.contains(claimedRatio)) {
            return REFUTED;
        }
        return INCONCLUSIVE;
    }
}
