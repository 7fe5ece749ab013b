package io.virtio4j.bench;

/** A benchmark run made no progress within the watchdog time: a lost notification or a hang. */
public final class BenchmarkStalledException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BenchmarkStalledException(String message) {
        super(message);
    }
}
