package io.virtio4j.bench;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.notify.ParkingNotifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The benchmark moves every buffer and verifies the echoed payload, in process and across two processes, with and
 * without an inflight region; with a dirty log it marks exactly the pages the device wrote.
 */
class BenchmarkRunsTest {

    private static BenchConfig small(String ring, String mode) {
        return BenchConfig.defaults().with("bufs", "200000").with("ring", ring).with("notify", mode)
                .with("verify", "true").with("chain", "3").with("queue-size", "64");
    }

    /**
     * With {@code flight-recording on} the run happens under a recording of its own, which is closed when the run
     * ends; without it none is started.
     */
    @ParameterizedTest
    @CsvSource({"on, true, default", "off, false, default", "on, true, ../share/virtio4j/jfr/virtio4j.jfc"})
    void aRecordedRunRunsUnderARecordingClosedAfterIt(String option, boolean recorded, String settings)
            throws Exception {
        List<RecordingState> states = new CopyOnWriteArrayList<>();
        List<Map<String, String>> settingsSeen = new CopyOnWriteArrayList<>();
        FlightRecorderListener listener = new FlightRecorderListener() {
            @Override
            public void recordingStateChanged(Recording r) {
                if (r.getName().equals("virtio4j bench --flight-recording")) {
                    states.add(r.getState());
                    if (r.getState() == RecordingState.RUNNING) {
                        settingsSeen.add(r.getSettings());
                    }
                }
            }
        };
        FlightRecorder.addListener(listener);
        try {
            BenchConfig cfg = small("split", "poll").with("flight-recording", option)
                    .with("flight-recording-settings", settings);
            RunResult r = RingBenchmark.run(cfg);
            assertEquals(cfg.bufs(), r.device().completions);
        } finally {
            FlightRecorder.removeListener(listener);
        }
        assertEquals(recorded ? List.of(RecordingState.RUNNING, RecordingState.CLOSED) : List.of(),
                states.stream().filter(s -> s == RecordingState.RUNNING || s == RecordingState.CLOSED).toList());
        assertTrue(FlightRecorder.isInitialized() || !recorded);
        if (recorded) {
            // the JDK's default samples execution every 20 ms; virtio4j.jfc names virtio4j's events only, so the
            // sampler is not enabled by it
            String sampler = settingsSeen.getFirst().get("jdk.ExecutionSample#enabled");
            assertEquals(settings.equals("default"), "true".equals(sampler),
                    "jdk.ExecutionSample#enabled under " + settings + ": " + sampler);
            assertEquals(!settings.equals("default"),
                    "true".equals(settingsSeen.getFirst().get("io.virtio4j.QueueBroken#enabled")),
                    "virtio4j's events enabled under " + settings);
        }
    }

    /**
     * Every buffer comes back exactly once, its echo checked (verify), under each policy, both reclaim policies among
     * them: at batch 1 lazy reclaim takes buffers back only once the ring is full, at a batch of 7 only after a round
     * that found no room for 7 (the ring of 64 is no multiple of it), and at the run's end however few are left.
     */
    @ParameterizedTest(name = "{0} {1} ring {2} indirect={3} publish={4} barriers={5} in-order={6} reclaim={7} batch={8}")
    @CsvSource({
        "split, poll, 64, false, eager, weak, off, eager, 64",
        "split, notify, 64, true, lazy, strong, on, lazy, 64",
        "split, hybrid, 64, false, adaptive, weak, off, lazy, 1",
        "split, notify, 64, false, adaptive, strong, on, eager, 7",
        "split, poll, 64, false, eager, weak, on, lazy, 7",
        "split, notify, 64, false, eager, weak, off, lazy, 1",
        "packed, poll, 64, false, eager, weak, off, lazy, 1",
        "packed, notify, 64, true, lazy, strong, on, eager, 64",
        "packed, hybrid, 48, false, adaptive, weak, on, lazy, 7",
        "packed, notify, 100, false, adaptive, strong, off, lazy, 64",
    })
    void inProcessRunsMoveEveryBuffer(String ring, String mode, int ringSize, boolean indirect, String publish,
                                      String barriers, String inOrder, String reclaim, int batch) throws Exception {
        BenchConfig cfg = small(ring, mode).with("queue-size", Integer.toString(ringSize))
                .with("indirect", Boolean.toString(indirect)).with("avail-publish", publish)
                .with("barriers", barriers).with("in-order", inOrder).with("reclaim", reclaim)
                .with("batch", Integer.toString(batch));
        RunResult r = RingBenchmark.run(cfg);
        assertEquals(cfg.bufs(), r.buffers());
        assertEquals(cfg.bufs(), r.driver().completions);
        assertEquals(cfg.bufs(), r.device().completions);
        assertTrue(r.elapsedNanos() > 0);
    }

    /** With an inflight region the device records every buffer it holds, and still moves every one, verified. */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "split, poll",
        "split, notify",
        "packed, poll",
        "packed, notify",
    })
    void inProcessRunsWithAnInflightRegionMoveEveryBuffer(String ring, String mode) throws Exception {
        BenchConfig cfg = small(ring, mode).with("inflight", "on").with("batch", "16");
        RunResult r = RingBenchmark.run(cfg);
        assertEquals(cfg.bufs(), r.buffers());
        assertEquals(cfg.bufs(), r.driver().completions);
        assertEquals(cfg.bufs(), r.device().completions);
        assertEquals(0, r.device().errors);
    }

    /**
     * The layout's device queue records in the inflight region placed after the control word: a fresh region is
     * initialised (version, desc_num), a buffer popped is marked in flight and cleared once its used entry is published;
     * without the option there is no region.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theDeviceQueueRecordsInTheLayoutsInflightRegion(RingFormat format) {
        String ring = format.name().toLowerCase(Locale.ROOT);
        assertEquals(-1, BenchLayout.of(small(ring, "poll")).inflightOffset());
        BenchConfig cfg = small(ring, "poll").with("inflight", "on").with("chain", "1");
        BenchLayout layout = BenchLayout.of(cfg);
        long regionBytes = InflightLayout.queueRegionBytes(format, cfg.ringSize());
        assertTrue(layout.inflightOffset() >= layout.controlOffset() + 4, "after the control word");
        assertEquals(0, layout.inflightOffset() % 4096, "on a page of its own");
        assertTrue(layout.inflightOffset() + regionBytes <= layout.totalBytes());
        boolean packed = format == RingFormat.PACKED;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(layout.totalBytes(), 4096);
            ParkingNotifier kick = new ParkingNotifier();
            DriverQueue driver = layout.driverQueue(mem, kick);
            DeviceQueue device = layout.deviceQueue(mem, new ParkingNotifier());
            MemorySegment region = mem.asSlice(layout.inflightOffset(), regionBytes);
            assertEquals(InflightLayout.VERSION, region.get(ValueLayout.JAVA_SHORT_UNALIGNED,
                    packed ? InflightLayout.PACKED_VERSION : InflightLayout.SPLIT_VERSION));
            assertEquals(cfg.ringSize(), region.get(ValueLayout.JAVA_SHORT_UNALIGNED,
                    packed ? InflightLayout.PACKED_DESC_NUM : InflightLayout.SPLIT_DESC_NUM));

            driver.add(new ScatterGather(1).readable(layout.element(0, 0), cfg.bufSize()), "buffer 0");
            driver.kick();
            DescriptorChain chain = device.pop();
            assertNotNull(chain);
            // split: the head's entry; packed: the first free-list entry, which holds the buffer's id
            long entry = packed ? InflightLayout.PACKED_HEADER_SIZE : InflightLayout.SPLIT_HEADER_SIZE
                    + (long) chain.head() * InflightLayout.SPLIT_ENTRY_SIZE;
            int flag = packed ? InflightLayout.PACKED_ENTRY_INFLIGHT : InflightLayout.SPLIT_ENTRY_INFLIGHT;
            assertEquals(1, region.get(ValueLayout.JAVA_BYTE, entry + flag), "in flight");
            if (packed) {
                assertEquals(chain.head(), region.get(ValueLayout.JAVA_SHORT_UNALIGNED,
                        entry + InflightLayout.PACKED_ENTRY_ID));
            }
            device.pushUsed(chain.head(), 0);
            device.flushUsed();
            assertEquals(0, region.get(ValueLayout.JAVA_BYTE, entry + flag), "returned");
            assertEquals("buffer 0", driver.pollUsed());
        }
    }

    /**
     * A run whose every page written by the device is known: 8 buffers of a 1-page readable and a 1-page writable
     * element, all in flight at once (16 of the ring's 64 descriptors), so the driver takes slots 63..56 once each
     * and the device writes its 8-byte echo into 8 distinct pages; its ring writes (used entries and index, or used
     * descriptors, and the event areas) all lie in the ring's one page.
     */
    private static BenchConfig eightPagesOfData(String ring, String mode) {
        return small(ring, mode).with(java.util.Map.of("bufs", "8", "chain", "2", "buf-size", "4096"));
    }

    /** The pages {@link #eightPagesOfData} writes: the ring's page and one page per buffer. */
    private static long pagesWritten(BenchConfig cfg) {
        BenchLayout layout = BenchLayout.of(cfg);
        assertEquals(DirtyLog.PAGE_SIZE, layout.ringBytes(), "the ring of 64 fits one page");
        return 1 + cfg.bufs();
    }

    /**
     * With the dirty log on, the run marks exactly the ring's page and the 8 pages the device echoed into (the
     * queue's used-ring writes and the device's data writes, nothing else: no control word, no readable element); off
     * there is no log and nothing is counted.
     */
    @ParameterizedTest(name = "{0} {1} inflight {2}")
    @CsvSource({
        "split, poll, off",
        "split, notify, on",
        "packed, poll, on",
        "packed, notify, off",
    })
    void aRunWithTheDirtyLogMarksThePagesTheDeviceWroteAndWithoutNone(String ring, String mode, String inflight)
            throws Exception {
        BenchConfig on = eightPagesOfData(ring, mode).with("inflight", inflight).with("dirty-log", "on");
        RunResult r = RingBenchmark.run(on);
        assertEquals(on.bufs(), r.buffers());
        assertEquals(0, r.device().errors);
        assertEquals(pagesWritten(on), r.dirtyPages(), "ring page + one page per echoed buffer");

        BenchConfig off = on.with("dirty-log", "off");
        assertEquals(-1, BenchLayout.of(off).dirtyLogOffset(), "no log without the option");
        RunResult none = RingBenchmark.run(off);
        assertEquals(off.bufs(), none.buffers());
        assertEquals(0, none.dirtyPages());
    }

    /**
     * The layout's dirty log lies after everything else, on a page of its own, with a bit for every page before
     * it; the layout's device queue marks its used-ring writes there (the ring's page, after a publication, not
     * before), and only those: data it did not write is not marked.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theDeviceQueueLogsItsRingWritesInTheLayoutsDirtyLog(RingFormat format) {
        String ring = format.name().toLowerCase(Locale.ROOT);
        BenchConfig cfg = eightPagesOfData(ring, "poll").with("inflight", "on").with("dirty-log", "on");
        BenchLayout layout = BenchLayout.of(cfg);
        assertTrue(layout.dirtyLogOffset() > layout.inflightOffset(), "after the inflight region");
        assertEquals(0, layout.dirtyLogOffset() % DirtyLog.PAGE_SIZE, "on a page of its own");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(layout.totalBytes(), 4096);
            DirtyLog log = layout.dirtyLog(mem);
            assertTrue(log.pages() >= layout.dirtyLogOffset() / DirtyLog.PAGE_SIZE, "covers every page before it");
            assertTrue(layout.dirtyLogOffset() + log.byteSize() <= layout.totalBytes());
            DriverQueue driver = layout.driverQueue(mem, new ParkingNotifier());
            DeviceQueue device = layout.deviceQueue(mem, new ParkingNotifier());
            driver.add(new ScatterGather(2).readable(layout.element(5, 0), cfg.bufSize())
                    .writable(layout.element(5, 1), cfg.bufSize()), "buffer 5");
            DescriptorChain chain = device.pop();
            assertNotNull(chain);
            device.pushUsed(chain.head(), 0);
            assertEquals(0, log.dirtyPages(), "nothing published yet");
            device.flushUsed();
            assertTrue(log.isDirty(0), "the ring's page, after the publication");
            assertFalse(log.isDirty(layout.element(5, 1) / DirtyLog.PAGE_SIZE), "the device wrote no data");
            assertEquals(1, log.dirtyPages());
            assertEquals("buffer 5", driver.pollUsed());
        }
        assertNull(BenchLayout.of(cfg.with("dirty-log", "off")).dirtyLog(MemorySegment.NULL), "no log when off");
    }

    @Test
    void twoProcessRunsMoveEveryBufferAndReportTheDevicesCounters() throws Exception {
        try (TwoProcessBenchmark two = TwoProcessBenchmark.start()) {
            for (String ring : new String[] {"split", "packed"}) {
                for (String mode : new String[] {"notify", "poll"}) {
                    // packed: a size that is no power of two, which the device process must take as a whole;
                    // poll runs with an inflight region in the device process, notify without
                    BenchConfig cfg = small(ring, mode).with("queue-size", ring.equals("packed") ? "48" : "64")
                            .with("inflight", mode.equals("poll") ? "on" : "off");
                    String what = ring + " " + mode + " inflight " + cfg.inflight();
                    RunResult r = two.run(cfg);
                    assertEquals(cfg.bufs(), r.buffers(), what);
                    assertEquals(cfg.bufs(), r.device().buffers, "device popped every buffer (" + what + ")");
                    assertEquals(cfg.bufs(), r.device().completions, what);
                    assertEquals(0, r.device().errors, what);
                    assertEquals(0, r.dirtyPages(), what);
                }
                // the device process marks the log in the shared memfd; this process counts it
                BenchConfig logged = eightPagesOfData(ring, "notify").with("dirty-log", "on");
                RunResult r = two.run(logged);
                assertEquals(logged.bufs(), r.buffers(), ring + " dirty-log on");
                assertEquals(pagesWritten(logged), r.dirtyPages(), ring + " dirty-log on");
            }
        }
    }
}
