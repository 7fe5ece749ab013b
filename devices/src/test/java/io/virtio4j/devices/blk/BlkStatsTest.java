package io.virtio4j.devices.blk;

import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.testkit.PrometheusExposition;
import org.junit.jupiter.api.Test;

import static io.virtio4j.testkit.PrometheusExposition.with;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** A request queue's counters as samples: each queue's under its own label, errors by status and cause. */
class BlkStatsTest {

    @Test
    void collectLabelsEachQueuesCountersAndSplitsErrorsByStatus() {
        BlkStats[] queues = {new BlkStats(), new BlkStats()};
        queues[1].add(BlkStats.READS, 4);
        queues[1].add(BlkStats.INVALID, 1);
        queues[1].add(BlkStats.MALFORMED, 2);
        queues[0].add(BlkStats.UNSUPPORTED, 3);
        queues[0].add(BlkStats.IO_ERRORS, 6);
        queues[0].add(BlkStats.SUBMITTED, 9);
        PrometheusText out = new PrometheusText();
        BlkStats.collect(out, "blk", queues);
        PrometheusExposition e = PrometheusExposition.parse(out.text());
        String[] q0 = {"device", "blk", "queue", "0", "direction", "request"};
        String[] q1 = {"device", "blk", "queue", "1", "direction", "request"};
        assertEquals(4, e.value("virtio4j_blk_requests_total", with(q1, "type", "read")));
        assertEquals(0, e.value("virtio4j_blk_requests_total", with(q0, "type", "read")));
        assertEquals(3, e.value("virtio4j_blk_requests_total", with(q1, "type", "refused")));
        assertEquals(3, e.value("virtio4j_blk_requests_total", with(q0, "type", "refused")));
        assertEquals(6, e.value("virtio4j_blk_errors_total", with(q0, "status", "ioerr", "cause", "io")));
        assertEquals(3, e.value("virtio4j_blk_errors_total", with(q0, "status", "unsupp")));
        assertEquals(1, e.value("virtio4j_blk_errors_total", with(q1, "status", "ioerr", "cause", "invalid")));
        assertEquals(2, e.value("virtio4j_blk_errors_total", with(q1, "status", "none")));
        assertEquals(9, e.value("virtio4j_inflight_submitted_total", q0));
        assertEquals(0, e.value("virtio4j_inflight_submitted_total", q1));
        assertEquals(2 * 4, e.families().get("virtio4j_blk_errors_total").samples().size());
    }
}
