package io.virtio4j.bench;

/** What the data says about a claim, computed from the ratio's confidence interval. */
public enum Verdict {
    /** The interval lies entirely on the side of 1 the claim predicts. */
    REPRODUCED("reproduced"),
    /** The interval contains 1: no effect distinguishable from noise. */
    NOT_REPRODUCED("not reproduced"),
    /** The interval lies entirely on the other side of 1. */
    OPPOSITE("opposite"),
    /** Not measured (placeholder or no interval). */
    NOT_MEASURED("not measured");

    private final String text;

    Verdict(String text) {
        this.text = text;
    }

    public String text() {
        return text;
    }

    public static Verdict of(PairedRatio r, boolean expectsIncrease) {
        if (!r.hasInterval()) {
            return NOT_MEASURED;
        }
        if (r.ciLow() > 1) {
            return expectsIncrease ? REPRODUCED : OPPOSITE;
        }
        if (r.ciHigh() < 1) {
            return expectsIncrease ? OPPOSITE : REPRODUCED;
        }
        return NOT_REPRODUCED;
    }
}
