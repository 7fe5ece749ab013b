package io.virtio4j.devices.net;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.fail;

/** Collects what a java.util.logging logger logs while open. */
final class LogCapture implements AutoCloseable {
    private static final long WATCHDOG_NANOS = 20_000_000_000L;

    private final Logger logger;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    LogCapture(Class<?> source) {
        logger = Logger.getLogger(source.getName());
        handler.setLevel(Level.ALL);
        logger.addHandler(handler);
    }

    /** Every record captured so far. */
    List<LogRecord> records() {
        return List.copyOf(records);
    }

    /** Waits (with a watchdog that fails the test) for a record at {@code level} whose message matches. */
    LogRecord await(Level level, Predicate<String> message) {
        long deadline = System.nanoTime() + WATCHDOG_NANOS;
        while (System.nanoTime() - deadline < 0) {
            for (LogRecord r : records) {
                if (r.getLevel().equals(level) && message.test(r.getMessage())) {
                    return r;
                }
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return fail("no " + level + " record as expected from " + logger.getName() + "; got " + records.stream()
                .map(r -> r.getLevel() + " " + r.getMessage()).toList());
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
