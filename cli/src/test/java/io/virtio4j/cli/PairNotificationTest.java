package io.virtio4j.cli;

import io.virtio4j.core.policy.NotificationMode;

import org.junit.jupiter.api.Test;
import picocli.CommandLine.TypeConversionException;

import static io.virtio4j.core.policy.NotificationMode.HYBRID;
import static io.virtio4j.core.policy.NotificationMode.NOTIFY;
import static io.virtio4j.core.policy.NotificationMode.POLL;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code serve net --notify}: one mode for every queue, or one per role. */
class PairNotificationTest {
    private final Converters.PairNotificationConverter converter = new Converters.PairNotificationConverter();

    @Test
    void oneModeForEveryQueue() {
        Converters.PairNotification n = converter.convert("Hybrid");
        assertArrayEquals(new NotificationMode[] {HYBRID, HYBRID, HYBRID, HYBRID}, n.perQueue(2));
        assertEquals("hybrid", n.describe());
    }

    @Test
    void oneModePerRoleReceiveQueuesAtEvenIndexes() {
        Converters.PairNotification n = converter.convert("tx=poll, rx=notify");
        assertArrayEquals(new NotificationMode[] {NOTIFY, POLL, NOTIFY, POLL}, n.perQueue(2));
        assertEquals("rx notify, tx poll", n.describe());
    }

    @Test
    void refusesWhatIsNotOneModeOrBothRoles() {
        for (String bad : new String[] {"sometimes", "rx=notify", "rx=notify,tx=poll,tx=poll", "rx=notify,tq=poll",
                "rx=notify,tx=often", "rx=notify,"}) {
            TypeConversionException e = assertThrows(TypeConversionException.class, () -> converter.convert(bad), bad);
            assertTrue(!e.getMessage().isBlank(), bad);
        }
    }
}
