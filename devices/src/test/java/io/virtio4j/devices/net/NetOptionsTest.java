package io.virtio4j.devices.net;

import io.virtio4j.devices.net.driver.NetDriver;

import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.os.DatagramPair;
import io.virtio4j.vhost.backend.VhostUserConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;
import java.util.logging.Level;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link NetDevice.Options}: errors name the library's option, and tap mode takes NOTIFY queues only. */
class NetOptionsTest {
    private static final byte[] MAC = NetBackend.MAC;

    private static InvalidNetOptionException refused(Runnable make, String option) {
        InvalidNetOptionException e = assertThrows(InvalidNetOptionException.class, make::run);
        assertEquals(option, e.option());
        assertFalse(e.getMessage().contains("--"), "the library does not speak in command-line flags: " + e.getMessage());
        return e;
    }

    @ParameterizedTest
    @EnumSource(value = NotificationMode.class, names = {"POLL", "HYBRID"})
    void tapModeRefusesQueuesItCannotSleepOnClearly(NotificationMode mode) {
        NetMode tap = new NetMode.Tap("v4j%d");
        refused(() -> new NetDevice.Options(1, tap, mode, 0, 64, new int[0], MAC, 1500), "notification");
        InvalidNetOptionException e = refused(() -> new NetDevice.Options(2, tap,
                new NotificationMode[] {NotificationMode.NOTIFY, NotificationMode.NOTIFY, NotificationMode.NOTIFY, mode},
                0, 64, new int[0], MAC, 1500), "notification");
        assertEquals("queue 3: " + mode, e.value(), e.getMessage());
    }

    @Test
    void tapModeTakesNotifyQueues() {
        NetDevice.Options o = new NetDevice.Options(2, new NetMode.Tap("v4j%d"), NotificationMode.NOTIFY, 0, 64,
                new int[0], MAC, 1500);
        for (int q = 0; q < 4; q++) {
            assertEquals(NotificationMode.NOTIFY, o.notification(q));
        }
    }

    @Test
    void theModeIsChosenPerQueue() {
        NetDevice.Options o = new NetDevice.Options(1, NetMode.LOOPBACK,
                new NotificationMode[] {NotificationMode.NOTIFY, NotificationMode.POLL}, 0, 64, new int[0], MAC, 1500);
        assertEquals(NotificationMode.NOTIFY, o.notification(0));
        assertEquals(NotificationMode.POLL, o.notification(1));
        refused(() -> new NetDevice.Options(1, NetMode.LOOPBACK, new NotificationMode[] {NotificationMode.NOTIFY}, 0,
                64, new int[0], MAC, 1500), "notification");
    }

    @Test
    void errorsNameTheOption() {
        refused(() -> new NetDevice.Options(0, NetMode.LOOPBACK, NotificationMode.POLL, 0, 64, new int[0], MAC, 1500), "pairs");
        refused(() -> new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.POLL, 0, 0, new int[0], MAC, 1500), "weight");
        refused(() -> new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.POLL, 0, 64, new int[0], MAC, 67), "mtu");
        refused(() -> new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.POLL, 0, 64, new int[0], new byte[5], 1500), "mac");
        refused(() -> new NetDevice.Options(1, NetMode.LOOPBACK, NotificationMode.POLL, -1, 64, new int[0], MAC, 1500), "hybridSpinNanos");
        refused(() -> new NetMode.Tap(""), "mode");
        refused(() -> TapPolling.TxPoll.parse("sometimes"), "txPoll");
    }

    /**
     * A front-end that asks to be polled (SET_VRING_KICK with NOFD) cannot be honoured in tap mode, which sleeps on
     * the tap and on kicks: the device refuses the ring ({@link NotificationModeRejectedException}, a
     * {@code QueueStartRefusedException}), the back-end refuses the front-end's request naming the queue (a
     * protocol refusal, not an internal error), and goes on serving: the next front-end gets its rings started.
     */
    @Test
    void tapModeRefusesARingTheFrontEndWantsPolled() throws Exception {
        try (DatagramPair port = DatagramPair.create()) {
            NetDevice device = NetDevice.overPorts(new NetDevice.Options(1, new NetMode.Tap("dgram"),
                    NotificationMode.NOTIFY, 0, 64, new int[0], MAC, 1500), List.of(port.first()));
            try (device) {
                NetTrafficTest.withBackend(() -> NetBackend.serving(device), backend -> {
                    try (LogCapture log = new LogCapture(VhostUserConnection.class)) {
                        try (NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults().withEventFds(false))) {
                            g.frontend().getFeatures(); // refused (REPLY_ACK) or the connection closed: this fails
                        } catch (RuntimeException expected) {
                            // the request that would have started the ring was refused
                        }
                        log.await(Level.WARNING, m -> m.contains("the device refused to start it")
                                && m.contains("queue 0") && m.contains("NOFD"));
                        assertTrue(log.records().stream().noneMatch(r -> r.getLevel().equals(Level.SEVERE)),
                                "a device's refusal is not an internal error");
                    }
                    try (NetDriver g = GuestTraffic.connect(backend.path(), NetDriver.Config.defaults())) {
                        assertTrue(g.frontend().getFeatures() != 0, "the back-end serves the next front-end");
                    }
                });
            }
        }
    }
}
