package io.virtio4j.devices.net;

import io.virtio4j.devices.metrics.PrometheusText;
import io.virtio4j.testkit.PrometheusExposition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** How a frame is counted: DPDK's size bins, multicast and broadcast, folded per pass into the pair's counters. */
class NetStatsTest {

    @ParameterizedTest
    @CsvSource({"0,0", "14,0", "63,0", "64,1", "65,2", "127,2", "128,3", "255,3", "256,4", "511,4", "512,5",
            "1023,5", "1024,6", "1518,6", "1519,7", "9000,7", "65535,7"})
    void sizeBinsAreDpdks(long length, int bin) {
        assertEquals(bin, NetStats.sizeBin(length));
    }

    private static MemorySegment frame(int... destination) {
        MemorySegment f = MemorySegment.ofArray(new byte[NetFeatures.HDR_LEN + 64]);
        for (int i = 0; i < destination.length; i++) {
            f.set(java.lang.foreign.ValueLayout.JAVA_BYTE, NetFeatures.HDR_LEN + i, (byte) destination[i]);
        }
        return f;
    }

    @Test
    void framesAreCountedByDestinationAndSizeAndFoldedOncePerPass() {
        FrameCounts counts = new FrameCounts();
        NetStats stats = new NetStats();
        counts.good(frame(0x52, 0x54, 0, 0x12, 0x34, 0x56), NetFeatures.HDR_LEN, 60); // unicast, undersize
        counts.good(frame(0xff, 0xff, 0xff, 0xff, 0xff, 0xff), NetFeatures.HDR_LEN, 64); // broadcast
        counts.good(frame(0x01, 0x00, 0x5e, 0x00, 0x00, 0x01), NetFeatures.HDR_LEN, 100); // IPv4 multicast
        counts.good(frame(0x33, 0x33, 0xff, 0xff, 0xff, 0xff), NetFeatures.HDR_LEN, 1518); // IPv6 multicast, not all ones
        // group bit, not broadcast, though the two octets after the address (read with it) are all ones
        counts.good(frame(0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff), NetFeatures.HDR_LEN, 1519);
        counts.drop();
        assertEquals(0, stats.packets(NetStats.TX), "nothing shared before the fold");
        counts.foldInto(stats, NetStats.TX);
        assertEquals(5, stats.packets(NetStats.TX));
        assertEquals(60 + 64 + 100 + 1518 + 1519, stats.bytes(NetStats.TX));
        assertEquals(1, stats.broadcast(NetStats.TX));
        assertEquals(3, stats.multicast(NetStats.TX));
        assertEquals(1, stats.drops(NetStats.TX));
        long[] bins = {1, 1, 1, 0, 0, 0, 1, 1};
        for (int b = 0; b < NetStats.SIZE_BINS; b++) {
            assertEquals(bins[b], stats.sizeBinCount(NetStats.TX, b), "bin " + b);
            assertEquals(0, stats.sizeBinCount(NetStats.RX, b), "rx bin " + b);
        }
        assertEquals(0, stats.packets(NetStats.RX));
        // the next pass starts at zero: folding again adds nothing
        counts.foldInto(stats, NetStats.TX);
        assertEquals(5, stats.packets(NetStats.TX));
        counts.good(frame(0x02), NetFeatures.HDR_LEN, 64);
        counts.foldInto(stats, NetStats.RX);
        NetStats sum = stats.plus(stats).plus(null);
        assertEquals(10, sum.packets(NetStats.TX));
        assertEquals(2, sum.packets(NetStats.RX));
        assertEquals(2, sum.sizeBinCount(NetStats.RX, 1));
        assertEquals(6, sum.multicast(NetStats.TX));
    }

    /**
     * Each pair's counters land in its own queues' series: queue 2p (the guest's receive queue) is direction tx,
     * 2p + 1 (its transmit queue) rx, DPDK's sense; qp is the pair; the thread's counters are under the pair alone.
     */
    @Test
    void collectLabelsEachCounterWithItsVirtqueuePairAndDpdksDirection() {
        NetStats[] pairs = {new NetStats(), new NetStats()};
        pairs[1].add(NetStats.TX, NetStats.PACKETS, 7);
        pairs[1].add(NetStats.RX, NetStats.SIZE + 7, 3);
        pairs[0].add(NetStats.RX, NetStats.SUPPRESSED, 2);
        pairs[1].add(NetStats.RX, NetStats.RING_EMPTY, 4);
        pairs[1].addPair(NetStats.WAKEUPS, 5);
        PrometheusText out = new PrometheusText();
        NetStats.collect(out, "net0", pairs);
        PrometheusExposition e = PrometheusExposition.parse(out.text());
        for (int q = 0; q < 4; q++) {
            String direction = q % 2 == 0 ? "tx" : "rx";
            String[] labels = {"device", "net0", "queue", Integer.toString(q), "qp", Integer.toString(q / 2),
                    "direction", direction};
            assertEquals(q == 3 ? 7 : 0, e.value("virtio4j_good_packets_total", labels), "queue " + q);
            assertEquals(q == 2 ? 3 : 0, e.value("virtio4j_size_1519_max_packets_total", labels), "queue " + q);
            assertEquals(q == 0 ? 2 : 0, e.value("virtio4j_guest_notifications_suppressed_total", labels), "queue " + q);
        }
        assertEquals(4, e.value("virtio4j_receive_ring_empty_total", "queue", "2", "qp", "1", "direction", "tx"));
        assertEquals(2, e.families().get("virtio4j_receive_ring_empty_total").samples().size(), "receive queues only");
        assertEquals(5, e.value("virtio4j_wakeups_total", "device", "net0", "qp", "1"));
        assertEquals(0, e.value("virtio4j_wakeups_total", "device", "net0", "qp", "0"));
        assertEquals(java.util.Set.of("device", "qp"),
                e.families().get("virtio4j_wakeups_total").samples().get(0).labels().keySet());
        assertEquals(4, e.families().get("virtio4j_good_bytes_total").samples().size());
    }
}
