package io.virtio4j.devices.net;

import io.virtio4j.devices.net.driver.NetDriver;

import io.virtio4j.devices.worker.KickSwitch;
import io.virtio4j.devices.worker.OneRunner;
import io.virtio4j.devices.worker.QueueAbandonedException;
import io.virtio4j.devices.worker.QueueRunner;
import io.virtio4j.devices.worker.QueueWorker;
import io.virtio4j.os.EventFd;
import io.virtio4j.vhost.backend.QueueContext;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.logging.Level;

import static io.virtio4j.devices.net.NetTrafficTest.frames;
import static io.virtio4j.devices.net.NetTrafficTest.withBackend;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A device whose pass throws, run by a {@link QueueRunner} over vhost-user: the worker dies, its queues are broken
 * and the front-end's error eventfd signalled, and the control thread never blocks on the dead worker: the
 * connection answers, GET_VRING_BASE returns, a restarted ring is broken at once, and the disconnect cleans up.
 */
class DeadWorkerTest {

    /** Pops a transmitted frame, then throws: a bug in a device's pass. */
    private static final class ExplodingWork implements QueueWorker {
        private final KickSwitch kicks = new KickSwitch();
        private QueueContext tx;

        @Override
        public void onAttach(QueueContext q) {
            if (q.index() % 2 == 1) {
                tx = q;
            }
        }

        @Override
        public void onDetach(QueueContext q) {
            if (q == tx) {
                tx = null;
            }
        }

        @Override
        public int doWork() {
            if (tx != null && !tx.queue().isBroken() && tx.queue().pop() != null) {
                throw new IllegalStateException("a bug in the device's pass");
            }
            return 0;
        }

        @Override
        public boolean prepareSleep() {
            return kicks.arm(tx);
        }

        @Override
        public void onWake(int events) {
            kicks.disarm(tx);
        }
    }

    /** One queue pair that looks like a net device to the guest, served by one runner of {@link ExplodingWork}. */
    private static final class ExplodingDevice extends OnePairNetLookalike {
        private final AtomicReferenceArray<QueueContext> started = new AtomicReferenceArray<>(2);
        private final OneRunner runner = new OneRunner("exploding-pair0", ExplodingWork::new);

        @Override
        public void startQueue(int index, QueueContext queue) {
            started.set(index, queue);
            runner.attach(queue);
        }

        @Override
        public void stopQueue(int index) {
            runner.detach(index);
        }

        @Override
        public void reset() {
            runner.close();
        }

        Throwable failure() {
            return runner.failure();
        }
    }

    private static void awaitSignal(EventFd fd) throws InterruptedException {
        while (fd.tryRead() == 0) {
            Thread.sleep(1); // the watchdog of withBackend bounds this
        }
    }

    @Test
    void aDeadWorkerBreaksItsQueuesSignalsTheErrorFdAndNeverBlocksTheConnection() {
        ExplodingDevice device = new ExplodingDevice();
        withBackend(() -> NetBackend.serving(device), backend -> {
            try (LogCapture log = new LogCapture(QueueRunner.class);
                 NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults());
                 EventFd err = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC)) {
                VhostUserFrontend fe = g.frontend();
                fe.setVringErr(1, err);
                long features = fe.getFeatures(); // answered once SET_VRING_ERR is handled

                GuestTraffic.addTx(g, 0, frames(new Random(1), 1, 0).get(0));
                g.kickTx(0);
                log.await(Level.SEVERE, m -> m.contains("exploding-pair0 died"));
                awaitSignal(err);
                assertInstanceOf(IllegalStateException.class, device.failure());

                // The control thread still answers, and stopping the rings returns.
                assertEquals(features, fe.getFeatures());
                fe.getVringBase(1);
                fe.getVringBase(0);
                QueueContext tx = device.started.get(1);
                assertInstanceOf(QueueAbandonedException.class, tx.queue().violation(), "transmit queue broken");
                assertInstanceOf(QueueAbandonedException.class, device.started.get(0).queue().violation(),
                        "receive queue broken");

                // A ring restarted on the dead worker is broken at once and the error eventfd signalled again.
                fe.setVringKick(1, g.kickFd(1));
                assertEquals(features, fe.getFeatures());
                awaitSignal(err);
                QueueContext again = device.started.get(1);
                assertNotSame(tx, again);
                assertTrue(again.queue().isBroken(), "a ring started on a dead worker is broken");
                assertInstanceOf(QueueAbandonedException.class, again.queue().violation());
            }
            // The disconnect stopped the rings and reset the device without waiting for the dead worker; a new
            // front-end gets a fresh runner.
            try (NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults())) {
                assertEquals(null, device.failure(), "a fresh runner after the reset");
                assertTrue(!device.started.get(1).queue().isBroken());
            }
        });
    }
}
