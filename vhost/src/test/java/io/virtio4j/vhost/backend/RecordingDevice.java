package io.virtio4j.vhost.backend;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A device that serves nothing and records what the session asks of it: starts and stops ({@link #calls}), the
 * contexts started rings are handed ({@link #started}), and, with {@link #deferRetire}, the unmappings it is given
 * ({@link #retired}) instead of running them, as a device whose queue thread did not stop does. Subclasses say what
 * it offers.
 */
abstract class RecordingDevice implements VirtioDevice {
    final List<String> calls = new CopyOnWriteArrayList<>();
    final List<QueueContext> started = new CopyOnWriteArrayList<>();
    final List<Runnable> retired = new CopyOnWriteArrayList<>();
    /** Makes {@link #retire} keep the unmapping in {@link #retired} instead of running it (a thread still runs). */
    volatile boolean deferRetire;

    @Override
    public byte[] config() {
        return new byte[0];
    }

    @Override
    public void startQueue(int index, QueueContext queue) {
        calls.add("start " + index);
        started.add(queue);
    }

    @Override
    public void stopQueue(int index) {
        calls.add("stop " + index);
    }

    @Override
    public void retire(Runnable unmap) {
        if (deferRetire) {
            retired.add(unmap);
        } else {
            unmap.run();
        }
    }
}
