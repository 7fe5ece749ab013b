package io.virtio4j.core.stats;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * reset, minus, copy and toString name every counter by hand: a counter added to the class and forgotten in one of
 * them fails here, because the fields are found by reflection, not listed again.
 */
class QueueCountersTest {

    private static List<Field> counters() {
        List<Field> fields = Arrays.stream(QueueCounters.class.getFields())
                .filter(f -> !Modifier.isStatic(f.getModifiers()) && f.getType() == long.class).toList();
        assertTrue(fields.size() >= 16, "the counters were found: " + fields);
        return fields;
    }

    /** Counter i holds base * (i + 1): distinct values, so a field copied from its neighbour is caught too. */
    private static QueueCounters filled(long base) throws IllegalAccessException {
        QueueCounters c = new QueueCounters();
        List<Field> fields = counters();
        for (int i = 0; i < fields.size(); i++) {
            fields.get(i).setLong(c, base * (i + 1));
        }
        return c;
    }

    @Test
    void copyMinusAndResetCoverEveryCounter() throws IllegalAccessException {
        QueueCounters later = filled(1000);
        QueueCounters earlier = filled(1);
        QueueCounters copy = later.copy();
        QueueCounters diff = later.minus(earlier);
        List<Field> fields = counters();
        for (int i = 0; i < fields.size(); i++) {
            Field f = fields.get(i);
            assertEquals(1000L * (i + 1), f.getLong(copy), "copy: " + f.getName());
            assertEquals(999L * (i + 1), f.getLong(diff), "minus: " + f.getName());
        }
        later.reset();
        for (Field f : fields) {
            assertEquals(0, f.getLong(later), "reset: " + f.getName());
        }
    }

    @Test
    void toStringShowsEveryCounter() throws IllegalAccessException {
        QueueCounters c = filled(1_000_003); // values no other counter's digits or a label can contain by chance
        String text = c.toString();
        List<Field> fields = counters();
        for (int i = 0; i < fields.size(); i++) {
            long v = fields.get(i).getLong(c);
            assertTrue(text.matches("(?s).*(?<![0-9])" + v + "(?![0-9]).*"),
                    fields.get(i).getName() + "=" + v + " missing from: " + text);
        }
    }
}
