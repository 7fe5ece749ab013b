package io.virtio4j.core.device;

import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The back-end dies after every step of a script (pops, unpops, pushes in and out of order, batched publications,
 * IN_ORDER coalescing, indirect chains) and a new one recovers from the inflight region, then dies once more later
 * on: every buffer comes back to the driver exactly once with its bytes (checksums), for both ring formats.
 */
class InflightCrashTest {
    /** Out-of-order completion, a give-back, batches of two and a buffer left in flight across publications. */
    private static final String[] OUT_OF_ORDER = {"add:6", "pop", "pop", "pop", "pop", "push:1", "push:2", "publish",
            "pop", "unpop", "pop", "push:0", "push:1", "publish", "add:2", "pop", "push:1", "push:0", "publish", "pop",
            "pop", "push:1", "push:0", "publish"};
    /** IN_ORDER: runs that coalesce (every third buffer is written in part and ends its run), a give-back. */
    private static final String[] IN_ORDER = {"add:6", "pop", "pop", "pop", "push:0", "push:0", "publish", "pop",
            "pop", "push:0", "push:0", "push:0", "publish", "pop", "push:0", "add:3", "pop", "pop", "unpop", "pop",
            "push:0", "push:0", "publish", "pop", "push:0", "publish"};

    record Case(String name, RingFormat format, int size, boolean inOrder, boolean indirect, int[] elements,
                String[] script) {
        @Override
        public String toString() {
            return name + " " + format;
        }

        InflightRig rig() {
            return new InflightRig(format, size, inOrder, indirect, name.hashCode(), elements);
        }
    }

    static List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        for (RingFormat format : formats()) {
            cases.add(new Case("out-of-order", format, 16, false, false, new int[] {1, 1, 2, 1}, OUT_OF_ORDER));
            cases.add(new Case("in-order", format, 16, true, false, new int[] {1, 1}, IN_ORDER));
            for (int s = 0; s < 3; s++) {
                cases.add(new Case("random-" + s, format, 16, false, false, new int[] {1, 1, 2, 2},
                        InflightRig.randomScript(s, 40, 16, 4, false)));
                cases.add(new Case("random-in-order-" + s, format, 16, true, false, new int[] {1, 2},
                        InflightRig.randomScript(100 + s, 40, 16, 3, true)));
            }
            cases.add(new Case("indirect", format, 16, false, true, new int[] {1, 1, 3, 2, 2, 3}, OUT_OF_ORDER));
            cases.add(new Case("random-indirect", format, 16, false, true, new int[] {1, 1, 3, 2, 2, 3},
                    InflightRig.randomScript(7, 40, 16, 2, false)));
        }
        return cases;
    }

    static List<RingFormat> formats() {
        return List.of(RingFormat.SPLIT, RingFormat.PACKED);
    }

    static Stream<Arguments> crashPoints() {
        return cases().stream().flatMap(c -> java.util.stream.IntStream.rangeClosed(0, c.script.length)
                .mapToObj(k -> Arguments.of(c, k)));
    }

    @ParameterizedTest(name = "{0} crash after step {1}")
    @MethodSource("crashPoints")
    void everyBufferComesBackOnceWhateverStepTheBackEndDiesAfter(Case c, int crashAfter) {
        try (InflightRig rig = c.rig()) {
            rig.run(Arrays.copyOfRange(c.script, 0, crashAfter));
            int inDevice = rig.popped().size();
            int resubmitted = rig.crash();
            // What the dead back-end held and had not published is resubmitted; nothing else.
            assertEquals(inDevice + pushedUnpublished(c.script, crashAfter), resubmitted, "resubmitted");
            // The new back-end dies too, before popping anything: its successor finds the same.
            assertEquals(resubmitted, rig.crash(), "resubmitted after a second death right after recovery");
            rig.drain();
            rig.assertAllBackOnce();
            // A second life: more buffers, a death with some in flight, a third back-end.
            rig.run("add:3", "pop", "pop", c.inOrder ? "push:0" : "push:1", "publish", "pop");
            rig.crash();
            rig.drain();
            rig.assertAllBackOnce();
        }
    }

    /** Pushed since the last publication, at the crash point. */
    private static int pushedUnpublished(String[] script, int upTo) {
        int n = 0;
        for (int i = 0; i < upTo; i++) {
            if (script[i].startsWith("push:")) {
                n++;
            } else if (script[i].equals("publish")) {
                n = 0;
            }
        }
        return n;
    }
}
