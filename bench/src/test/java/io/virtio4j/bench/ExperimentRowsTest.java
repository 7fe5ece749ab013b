package io.virtio4j.bench;

import io.virtio4j.core.layout.RingFormat;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The A/B rows are well formed: each ring benchmark row's two sides differ in its key and in nothing else. */
class ExperimentRowsTest {

    @Test
    void eachRingRowsSidesDifferOnlyInItsKey() {
        for (Experiment e : Experiment.all(1000)) {
            if (e.tap() != null) {
                continue;
            }
            Map<String, String> a = new HashMap<>(e.configA().toMap());
            Map<String, String> b = new HashMap<>(e.configB().toMap());
            assertFalse(a.get(e.key()).equals(b.get(e.key())), e.id());
            a.remove(e.key());
            b.remove(e.key());
            assertEquals(a, b, e.id());
            assertEquals(1000, e.configA().bufs(), e.id());
        }
    }

    @Test
    void packedVersusSplitAndInOrderAreRowsOfTheirOwnLessons() {
        List<Experiment> format = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.RING_FORMAT)).selected();
        assertEquals(List.of("packed-vs-split"), format.stream().map(Experiment::id).toList());
        Experiment f = format.getFirst();
        assertEquals(RingFormat.SPLIT, f.configA().ring());
        assertEquals(RingFormat.PACKED, f.configB().ring());
        assertTrue(f.expectsIncrease());

        List<Experiment> order = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.IN_ORDER)).selected();
        assertEquals(List.of("in-order"), order.stream().map(Experiment::id).toList());
        Experiment o = order.getFirst();
        assertFalse(o.configA().inOrder());
        assertTrue(o.configB().inOrder());
        assertEquals(RingFormat.SPLIT, o.base().ring(), "the claim is about the split ring");
        assertTrue(o.expectsIncrease());
    }
}
