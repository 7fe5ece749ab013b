package io.virtio4j.bench;

/** A benchmark run failed: a thread threw, or data came back wrong. */
public final class BenchmarkFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BenchmarkFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
