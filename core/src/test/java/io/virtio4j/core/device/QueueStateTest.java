package io.virtio4j.core.device;

import io.virtio4j.core.RingTestSupport.Pair;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A state taken while used entries are pushed but not yet published would have skipped them on restart, and the
 * driver would wait for them for ever: state() refuses then; after publishUsed() it gives a state that, restarted
 * from, loses nothing.
 */
class QueueStateTest {

    @ParameterizedTest
    @CsvSource({"SPLIT, false", "SPLIT, true", "PACKED, false", "PACKED, true"})
    void aStateIsTakenOnlyOnceEveryPushedEntryIsPublished(RingFormat format, boolean inOrder) {
        try (Pair p = Pair.open(format, 8, DriverOptions.defaults().withInOrder(inOrder),
                DeviceOptions.defaults().withInOrder(inOrder))) {
            for (int round = 0; round < 5; round++) { // across the ring's end
                p.add("a" + round, 1, 1);
                p.add("b" + round, 1, 1);
                p.driver.kick();
                p.popAndPush();
                p.popAndPush();
                assertThrows(IllegalStateException.class, p.device::state);
                p.device.flushUsed();
                QueueState s = p.device.state();
                p.device.restart(s);
                assertEquals(s, p.device.state());
                p.reap("a" + round, "b" + round);
                assertNull(p.driver.pollUsed());
            }
        }
    }
}
