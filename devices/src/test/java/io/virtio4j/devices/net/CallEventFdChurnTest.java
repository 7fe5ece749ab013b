package io.virtio4j.devices.net;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.net.driver.NetDriver;
import io.virtio4j.os.EventFd;
import io.virtio4j.testkit.OpenFds;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static io.virtio4j.devices.net.GuestTraffic.connect;
import static io.virtio4j.devices.net.NetTrafficTest.echoAndCheck;
import static io.virtio4j.devices.net.NetTrafficTest.withBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * QEMU sends SET_VRING_CALL on every interrupt mask and unmask, for the life of a VM, with the rings running and
 * the queue thread signalling: thousands of them must leave the back-end holding no more descriptors than before,
 * each replaced eventfd closed without the ring being stopped, and the traffic intact.
 */
class CallEventFdChurnTest {
    private static final int REPLACEMENTS = 2_000;
    private static final String EVENTFD = "anon_inode:[eventfd]";

    private static long eventFds() {
        return OpenFds.snapshot().values().stream().filter(EVENTFD::equals).count();
    }

    @Test
    void thousandsOfCallReplacementsUnderTrafficLeaveNoEventFdBehind() {
        withBackend(NetBackend.options(1, NetMode.LOOPBACK, NotificationMode.NOTIFY), backend -> {
            try (NetDriver g = connect(backend.path(), NetDriver.Config.defaults())) {
                VhostUserFrontend fe = g.frontend();
                echoAndCheck(g, 0, 100, 100, 0, false, new Random(31)); // rings started, descriptors settled
                AtomicBoolean stop = new AtomicBoolean();
                AtomicLong echoed = new AtomicLong();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                Thread traffic = new Thread(() -> {
                    Random rnd = new Random(32);
                    try {
                        while (!stop.get()) {
                            echoAndCheck(g, 0, 64, 64, 0, false, rnd); // every frame checked byte for byte
                            echoed.addAndGet(64);
                        }
                    } catch (Throwable t) {
                        failure.set(t);
                    }
                }, "guest-traffic");
                traffic.setDaemon(true); // a failing run must not keep the JVM waiting on it
                long before = eventFds();
                traffic.start();
                try {
                    for (int i = 0; i < REPLACEMENTS && failure.get() == null; i++) {
                        int ring = i % 2; // receive and transmit in turn
                        try (EventFd masked = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                            fe.setVringCall(ring, masked); // masking: QEMU's own eventfd takes the calls
                        }
                        // unmasking: the guest's eventfd again, which the back-end signals once on installing it
                        fe.setVringCall(ring, g.callFd(ring));
                        assertEquals(before, eventFds(), "eventfds open after replacement " + i);
                    }
                } finally {
                    stop.set(true);
                    traffic.join();
                }
                assertNull(failure.get(), () -> "guest traffic failed: " + failure.get());
                assertTrue(echoed.get() > 0, "no traffic went through while the call eventfds were replaced");
                // The rings were never stopped: they carry traffic still, with the same descriptors.
                echoAndCheck(g, 0, 100, 100, 0, false, new Random(33));
                assertEquals(before, eventFds());
                assertFalse(traffic.isAlive());
            }
        });
    }
}
