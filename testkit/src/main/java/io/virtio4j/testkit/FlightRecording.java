package io.virtio4j.testkit;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Predicate;

/**
 * A JFR recording a test starts around what it does, and the virtio4j events in it ({@code io.virtio4j.*}) read
 * back from the file it is dumped to, as a user reads a recording. Each test makes its own: recordings do not
 * interfere, but every recording sees every event the JVM emits while it runs, so a test picks the events of its
 * own session out of them ({@link #on}, or a field it knows).
 */
public final class FlightRecording implements AutoCloseable {
    /** The prefix of every virtio4j event name. */
    public static final String PREFIX = "io.virtio4j.";

    private final Recording recording = new Recording();

    private FlightRecording() {
    }

    /**
     * Starts recording. No settings: every event is recorded as its class declares (virtio4j's are enabled), the
     * JDK's own are not.
     */
    public static FlightRecording start() {
        FlightRecording r = new FlightRecording();
        r.recording.setToDisk(true);
        r.recording.start();
        return r;
    }

    /** Stops recording, dumps it to {@code file} and reads the virtio4j events back from there, in time order. */
    public List<RecordedEvent> stop(Path file) {
        recording.stop();
        try {
            recording.dump(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return read(file);
    }

    /** The virtio4j events in the recording {@code file}, in time order. */
    public static List<RecordedEvent> read(Path file) {
        try {
            return RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().startsWith(PREFIX))
                    .sorted((a, b) -> a.getStartTime().compareTo(b.getStartTime()))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The events named {@code PREFIX + name}. */
    public static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(PREFIX + name)).toList();
    }

    /** Events emitted on a thread whose name contains {@code threadName}: one session's control thread, say. */
    public static Predicate<RecordedEvent> on(String threadName) {
        return e -> e.getThread() != null && e.getThread().getJavaName() != null
                && e.getThread().getJavaName().contains(threadName);
    }

    @Override
    public void close() {
        recording.close();
    }
}
