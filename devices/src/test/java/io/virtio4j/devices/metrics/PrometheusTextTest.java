package io.virtio4j.devices.metrics;

import io.virtio4j.testkit.PrometheusExposition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The exposition writer: exactly the text format 0.0.4, whatever order samples come in, and nothing it cannot write. */
class PrometheusTextTest {

    @Test
    void familiesAreWrittenWholeWithHelpAndTypeFirstInTheOrderFirstAskedFor() {
        PrometheusText t = new PrometheusText();
        t.counter("virtio4j_a_total", "A things.").sample(1, "device", "net", "queue", "0");
        t.gauge("virtio4j_b", "B now.").sample(-7);
        // a second source adds to the first family after the second began: still written with its family
        t.counter("virtio4j_a_total", "A things.").sample(2, "device", "blk", "queue", "0");
        assertEquals("""
                # HELP virtio4j_a_total A things.
                # TYPE virtio4j_a_total counter
                virtio4j_a_total{device="net",queue="0"} 1
                virtio4j_a_total{device="blk",queue="0"} 2
                # HELP virtio4j_b B now.
                # TYPE virtio4j_b gauge
                virtio4j_b -7
                """, t.text());
        PrometheusExposition e = PrometheusExposition.parse(t.text());
        assertEquals(2, e.value("virtio4j_a_total", "device", "blk"));
        assertEquals(List.of("virtio4j_a_total", "virtio4j_b"), List.copyOf(e.families().keySet()));
    }

    @Test
    void helpAndLabelValuesAreEscapedAndReadBackAsGiven() {
        PrometheusText t = new PrometheusText();
        String help = "back\\slash, \"quoted\",\nsecond line";
        String value = "a\\b \"c\"\nd,e}=f";
        t.counter("virtio4j_x_total", help).sample(3, "path", value);
        String text = t.text();
        assertTrue(text.contains("# HELP virtio4j_x_total back\\\\slash, \"quoted\",\\nsecond line\n"), text);
        assertTrue(text.contains("virtio4j_x_total{path=\"a\\\\b \\\"c\\\"\\nd,e}=f\"} 3\n"), text);
        PrometheusExposition e = PrometheusExposition.parse(text);
        PrometheusExposition.Family f = e.families().get("virtio4j_x_total");
        assertEquals(help, f.help());
        assertEquals(Map.of("path", value), f.samples().get(0).labels());
        assertEquals(Long.MAX_VALUE, PrometheusExposition.parse(maxText()).value("virtio4j_y_total"));
    }

    private static String maxText() {
        PrometheusText t = new PrometheusText();
        t.counter("virtio4j_y_total", "y").sample(Long.MAX_VALUE);
        return t.text();
    }

    @Test
    void aFamilyWithoutSamplesStillHasItsHelpAndType() {
        PrometheusText t = new PrometheusText();
        t.counter("virtio4j_none_total", "Nothing yet.");
        assertEquals("# HELP virtio4j_none_total Nothing yet.\n# TYPE virtio4j_none_total counter\n", t.text());
        assertEquals("", new PrometheusText().text());
    }

    @ParameterizedTest
    @ValueSource(strings = {"virtio4j_packets", "9lives_total", "has-dash_total", "has space_total", "_total_no"})
    void aCounterNameThatIsNoneOrLacksTotalIsRefused(String name) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new PrometheusText().counter(name, "h"));
        assertTrue(e.getMessage().contains(name), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"9queue", "__reserved", "has-dash", "", "a b"})
    void aLabelNameThatIsNoneIsRefused(String label) {
        PrometheusText.Family f = new PrometheusText().counter("virtio4j_z_total", "z");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f.sample(1, label, "v"));
        assertTrue(e.getMessage().contains("label name " + label), e.getMessage());
    }

    @Test
    void oddLabelsARepeatedLabelASeriesTwiceAndANameRetypedAreRefused() {
        PrometheusText t = new PrometheusText();
        PrometheusText.Family f = t.counter("virtio4j_z_total", "z");
        assertThrows(IllegalArgumentException.class, () -> f.sample(1, "queue"));
        assertThrows(IllegalArgumentException.class, () -> f.sample(1, "queue", "0", "queue", "1"));
        f.sample(1, "queue", "0");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> f.sample(2, "queue", "0")).getMessage()
                .contains("duplicate series virtio4j_z_total{queue=\"0\"}"));
        f.sample(3, "queue", "1", "direction", "rx");
        assertThrows(IllegalArgumentException.class, () -> f.sample(4, "direction", "rx", "queue", "1"),
                "the same label set in another order is the same series");
        assertThrows(IllegalArgumentException.class, () -> t.gauge("virtio4j_z_total", "z"));
        assertThrows(IllegalArgumentException.class, () -> t.counter("virtio4j_z_total", "other help"));
        // what was refused left nothing behind
        assertEquals(2, PrometheusExposition.parse(t.text()).families().get("virtio4j_z_total").samples().size());
    }

    /** The test's reader refuses what the format forbids, so that a pass of the endpoint tests means something. */
    @ParameterizedTest
    @ValueSource(strings = {
            "virtio4j_a_total 1\n", // no HELP/TYPE
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total 1", // no final line feed
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total 1\nvirtio4j_a_total 2\n",
            "# HELP virtio4j_a a\n# TYPE virtio4j_a counter\nvirtio4j_a 1\n", // counter without _total
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total{q=\"0} 1\n",
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total{q=\"\\t\"} 1\n",
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total -1\n",
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\n# HELP virtio4j_b b\n# TYPE virtio4j_b gauge\n"
                    + "virtio4j_b 1\nvirtio4j_a_total 1\n", // a family's sample apart from it
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total countr\nvirtio4j_a_total 1\n",
            // one series twice, its labels in another order
            "# HELP virtio4j_a_total a\n# TYPE virtio4j_a_total counter\nvirtio4j_a_total{q=\"0\",d=\"rx\"} 1\n"
                    + "virtio4j_a_total{d=\"rx\",q=\"0\"} 2\n"})
    void theReaderRefusesBrokenExpositions(String text) {
        assertThrows(IllegalArgumentException.class, () -> PrometheusExposition.parse(text));
    }
}
