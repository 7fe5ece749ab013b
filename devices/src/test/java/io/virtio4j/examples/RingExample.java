package io.virtio4j.examples;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.ParkingNotifier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * The README's first example ("Use as a library"): both ends of one ring in one process, with nothing but
 * {@code virtio4j-core}. The README shows the lines between the {@code README:} markers; {@code ReadmeExamplesTest}
 * checks that they are these lines, word for word, and runs them.
 */
final class RingExample {
    private RingExample() {
    }

    /** What came back: the token the driver added the buffer with, and what the device wrote into it. */
    record Answer(Object token, byte[] bytes) {
    }

    /** Sends {@code request} (at most 4096 bytes) through a ring of {@code format} carved from {@code arena}. */
    static Answer roundTrip(Arena arena, RingFormat format, byte[] request) {
        // README:ring
        // a ring of 256 entries and 64 KiB of buffers in one segment: a buffer's address is its offset there
        RingSegment ring = RingSegment.allocate(arena, format, 256, 4096, 64 << 10);
        DriverQueue driver = DriverQueue.over(ring.areas(), DriverOptions.defaults(), new ParkingNotifier());
        DeviceQueue device = DeviceQueue.over(ring.areas(), ring.guestMemory(), DeviceOptions.defaults(),
                new ParkingNotifier());

        // driver: a request the device reads and a buffer it writes its answer into, added under a token
        long out = ring.dataOffset(), in = out + 4096;
        MemorySegment.copy(MemorySegment.ofArray(request), 0, ring.segment(), out, request.length);
        driver.add(new ScatterGather(2).readable(out, request.length).writable(in, 4096), "request 1");
        driver.kick(); // publishes it, and signals the device's notifier if the device asked for kicks

        // device (usually another thread, or another process over shared memory): pop, answer, push back
        DescriptorChain chain = device.pop();
        MemorySegment staging = arena.allocate(chain.readableBytes());
        chain.gather(0, staging, 0, staging.byteSize());
        for (long i = 0; i < staging.byteSize(); i++) {
            staging.set(JAVA_BYTE, i, (byte) Character.toUpperCase(staging.get(JAVA_BYTE, i)));
        }
        long written = chain.scatter(0, staging, 0, staging.byteSize());
        device.pushUsed(chain.head(), written);
        device.flushUsed(); // publishes the used entry, and notifies the driver if it asked for it

        // driver: reap it; the token says which request it was
        Object token = driver.pollUsed();
        byte[] answer = ring.segment().asSlice(in, driver.lastUsedLength()).toArray(JAVA_BYTE);
        // README:end
        return new Answer(token, answer);
    }
}
