package io.virtio4j.bench;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
            // the claims' drivers take used buffers back after every round, whatever the bench's default
            assertEquals(Reclaim.EAGER, e.configA().reclaim(), e.id());
            // a request-response transaction is a whole round trip: fewer of them a run, fewer still sleeping
            long bufs = e.base().pattern() == TrafficPattern.STREAM ? 1000
                    : e.base().mode() == NotificationMode.POLL ? 100 : 10;
            assertEquals(bufs, e.configA().bufs(), e.id());
        }
    }

    @Test
    void theBarrierLessonHasRequestResponseRowsPollingAndSleepingInOneProcessAndTwo() {
        List<Experiment> rr = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.BARRIERS)).selected().stream()
                .filter(e -> e.base().pattern() == TrafficPattern.RR).toList();
        assertEquals(List.of("barrier-strength-rr-poll-1p", "barrier-strength-rr-notify-1p", "barrier-strength-rr-poll-2p",
                "barrier-strength-rr-notify-2p"), rr.stream().map(Experiment::id).toList());
        for (Experiment e : rr) {
            assertEquals(e.id().endsWith("2p") ? 2 : 1, e.processes(), e.id());
            assertEquals(e.id().contains("poll") ? NotificationMode.POLL : NotificationMode.NOTIFY, e.base().mode(), e.id());
            assertEquals(Ordering.WEAK, e.configA().barriers(), e.id());
            assertEquals(Ordering.STRONG, e.configB().barriers(), e.id());
            assertEquals(1, e.base().batch(), e.id());
            assertEquals(Metric.BUFFERS_PER_S, e.metric(), "transactions/s: one buffer is one transaction");
            assertFalse(e.expectsIncrease(), e.id());
            assertEquals(0.86, e.claimedRatio(), e.id());
            assertEquals(Metric.STRONG_FENCES_PER_BUFFER, e.counter(), e.id());
        }
        assertTrue(Experiment.all(1000).stream().filter(e -> e.processes() == 2).allMatch(rr::contains),
                "only these rows need a second process");
    }

    @Test
    void lazyPublicationHasVhostUserRowsAgainstAPollingAndASleepingBackEnd() {
        List<Experiment> vhost = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.LAZY_PUBLISH)).selected().stream()
                .filter(Experiment::vhostUser).toList();
        assertEquals(List.of("lazy-avail-publish-vhost-user", "lazy-avail-publish-vhost-user-adaptive",
                "lazy-avail-publish-vhost-user-notify"), vhost.stream().map(Experiment::id).toList());
        for (Experiment e : vhost) {
            boolean notify = e.id().endsWith("notify");
            assertEquals(notify ? NotificationMode.NOTIFY : NotificationMode.POLL, e.base().mode(), e.id());
            assertEquals(AvailPublication.EAGER, e.configA().availPublish(), e.id());
            assertEquals(e.id().endsWith("adaptive") ? AvailPublication.ADAPTIVE : AvailPublication.LAZY,
                    e.configB().availPublish(), e.id());
            assertEquals(notify ? Metric.KICKS_PER_BUFFER : Metric.BUFFERS_PER_S, e.metric(), e.id());
            assertTrue(e.expectsIncrease(), e.id());
            assertEquals(notify ? Double.NaN : 1.67, e.claimedRatio(), e.id());
            assertEquals(Metric.AVAIL_IDX_WRITES_PER_BUFFER, e.counter(), e.id());
            assertEquals(64, e.base().bufSize(), "64-byte frames: " + e.id());
            assertEquals(1, e.processes(), e.id());
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

        List<Experiment> order = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.IN_ORDER)).selected().stream()
                .filter(e -> !e.vhostUser()).toList();
        assertEquals(List.of("in-order", "in-order-lazy", "in-order-packed"), order.stream().map(Experiment::id).toList());
        for (Experiment o : order) {
            assertFalse(o.configA().inOrder(), o.id());
            assertTrue(o.configB().inOrder(), o.id());
            assertTrue(o.expectsIncrease(), o.id());
            assertEquals(NotificationMode.POLL, o.base().mode(), o.id());
            assertEquals(Metric.AVAIL_IDX_READS_PER_BUFFER, o.counter(), "the device's polls show the chase: " + o.id());
        }
        Experiment o = order.getFirst();
        assertEquals(RingFormat.SPLIT, o.base().ring(), "the claim is about the split ring");
        assertEquals(AvailPublication.EAGER, o.base().availPublish());
        assertEquals(AvailPublication.LAZY, order.get(1).base().availPublish(), "the driver publishing once per kick");
        assertEquals(RingFormat.SPLIT, order.get(1).base().ring());
        assertEquals(RingFormat.PACKED, order.get(2).base().ring());
        assertEquals(1.19, order.get(2).claimedRatio(), "vhost-net transmit's +19%");
    }

    /**
     * IN_ORDER's "+19% on vhost-net transmit" in a vhost-user set-up: NetDriver into serve net rxonly polling, IN_ORDER
     * off against on, split with eager publication, packed, and split with lazy publication; nothing else differs.
     */
    @Test
    void inOrderHasVhostUserRowsForSplitPackedAndLazyPublication() {
        List<Experiment> vhost = new ExperimentRunner(1000, 2, 0, Set.of(Experiment.IN_ORDER)).selected().stream()
                .filter(Experiment::vhostUser).toList();
        assertEquals(List.of("in-order-vhost-user", "in-order-vhost-user-packed", "in-order-vhost-user-lazy"),
                vhost.stream().map(Experiment::id).toList());
        for (Experiment e : vhost) {
            assertEquals("in-order", e.key(), e.id());
            assertFalse(e.configA().inOrder(), e.id());
            assertTrue(e.configB().inOrder(), e.id());
            assertEquals(NotificationMode.POLL, e.base().mode(), e.id());
            assertEquals(Metric.BUFFERS_PER_S, e.metric(), e.id());
            assertTrue(e.expectsIncrease(), e.id());
            assertEquals(1.19, e.claimedRatio(), "vhost-net transmit's +19%: " + e.id());
            assertEquals(64, e.base().bufSize(), "64-byte frames: " + e.id());
            assertEquals(64, e.base().batch(), e.id());
            assertTrue(e.claim().contains("vhost-net") && e.claim().contains("serve net rxonly"),
                    "the text says how the set-up differs from the claim's: " + e.claim());
            // every option the row sets is one its runs follow, or the run would refuse it
            VhostUserTxBench.TAKEN.toMap().forEach((option, value) -> assertTrue(
                    VhostUserTxBench.FOLLOWED.contains(option) || option.equals("bufs")
                            || value.equals(e.base().toMap().get(option)), e.id() + ": " + option));
        }
        // the back-end's queue counters are its thread's: the driver's avail entry stores show IN_ORDER on a split ring
        assertEquals(Metric.AVAIL_ENTRY_WRITES_PER_BUFFER, vhost.get(0).counter());
        assertEquals(null, vhost.get(1).counter(), "a packed ring has no avail entries");
        assertEquals(Metric.AVAIL_ENTRY_WRITES_PER_BUFFER, vhost.get(2).counter());
        assertEquals(RingFormat.SPLIT, vhost.get(0).base().ring());
        assertEquals(AvailPublication.EAGER, vhost.get(0).base().availPublish());
        assertEquals(RingFormat.PACKED, vhost.get(1).base().ring());
        assertEquals(AvailPublication.EAGER, vhost.get(1).base().availPublish());
        assertEquals(RingFormat.SPLIT, vhost.get(2).base().ring());
        assertEquals(AvailPublication.LAZY, vhost.get(2).base().availPublish());
    }

    @Test
    void aVhostUserRowVariesOnlyAnOptionItsRunsFollow() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Experiment("x",
                Experiment.BARRIERS, "claim", BenchConfig.defaults(), "barriers", "weak", "strong",
                Metric.BUFFERS_PER_S, false, 0.86, null, null, 1, true));
        assertTrue(e.getMessage().startsWith("experiment x: a vhost-user experiment varies an option its runs follow "),
                e.getMessage());
        assertTrue(e.getMessage().endsWith(", got barriers"), e.getMessage());
    }
}
