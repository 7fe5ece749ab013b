package io.virtio4j.devices.blk.driver;

import io.virtio4j.core.layout.PackedLayout;
import io.virtio4j.core.layout.PackedRingAreas;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.SplitLayout;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.devices.blk.BlkDevice;
import io.virtio4j.devices.blk.BlkLayout;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.testkit.Bytes;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.vhost.frontend.DirtyLogging;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.frontend.FrontendSession;
import io.virtio4j.vhost.frontend.GuestMemory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;

import static io.virtio4j.devices.DirtyPages.pages;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dirty logging end to end: our front-end library starts logging on a running virtio-blk device served in process
 * (SET_LOG_BASE, LOG_ALL, the ring's log flag, the ring restarted under it), the device serves a read and a write,
 * and the log holds exactly the pages the device wrote: the read's data pages, the pages of both status bytes and
 * the used ring's; not the write's data pages, which the device only read. The read data is intact (checksum against
 * the file). With logging stopped, nothing more is marked.
 */
@ExtendWith(NoFdLeaks.class)
class BlkDirtyLogTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int BYTES = 8192;

    @TempDir
    Path dir;

    /** A store over a file in {@link #dir} holding {@code disk}. */
    private BlockStore store(byte[] disk) throws Exception {
        Path f = dir.resolve("disk.img");
        Files.write(f, disk);
        return BlockStore.open(f.toString(), false, 512);
    }

    /** One synchronous queue of 16 over {@code store}. */
    private static BlkDevice device(BlockStore store) {
        return new BlkDevice(store, new BlkDevice.Options(1, BlockEngine.SYNC, 16, 64, new int[0], "dirty-log",
                NotificationMode.NOTIFY, 20_000));
    }

    /** One queue of 16 in {@code format}, {@code depth} requests of up to 16 KiB in flight. */
    private static BlkDriver.Config config(RingFormat format, int depth) {
        return BlkDriver.Config.defaults().withQueues(1).withDepth(depth).withQueueSize(16).withMaxRequestBytes(16384)
                .withFormat(format);
    }

    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void theLogMarksExactlyThePagesTheDeviceWrote(RingFormat format) throws Exception {
        byte[] disk = Bytes.random(1 << 20, 13);
        try (BlockStore store = store(disk)) {
            BlkDevice device = device(store);
            BlkDriver.Config config = config(format, 4);
            InProcessBackend.Connected c = InProcessBackend.start(device, "blk");
            try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), config);
                 DirtyLogging logging = DirtyLogging.start(d.session())) {
                GuestMemory m = d.session().memory();
                BitSet before = logging.takeDirtyPages(); // the restart may have written the ring's kick suppression
                // What the queue itself writes. Split: the used ring (entries and index on every publication, flags or
                // avail_event on a kick switch, in the same pages). Packed: the used descriptors in the descriptor
                // ring on every publication, the device event area on a kick switch only (which this test does not
                // control: it may be marked or not).
                BitSet ringMust = new BitSet();
                BitSet ringMay = new BitSet();
                switch (d.session().ring(0).areas()) {
                    case SplitRingAreas a -> pages(ringMust, m.gpa(a.usedRing()), SplitLayout.usedRingBytes(16));
                    case PackedRingAreas a -> {
                        pages(ringMust, m.gpa(a.descRing()), PackedLayout.descRingBytes(16));
                        pages(ringMay, m.gpa(a.deviceEvent()), PackedLayout.EVENT_SIZE);
                    }
                }
                ringMay.or(ringMust);
                BitSet beyondRing = (BitSet) before.clone();
                beyondRing.andNot(ringMay);
                assertTrue(beyondRing.isEmpty(), "before any request only the ring is written: " + before);

                int r = d.acquire(0);
                int w = d.acquire(0);
                d.read(0, r, 0, BYTES);
                assertEquals(BlkLayout.S_OK, d.run(0, r, TIMEOUT));
                assertEquals(crc(MemorySegment.ofArray(disk).asSlice(0, BYTES)), crc(d.data(0, r), 0, BYTES), "read data intact");
                MemorySegment out = d.data(0, w);
                for (int i = 0; i < BYTES; i++) {
                    out.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
                }
                d.write(0, w, 64, BYTES);
                assertEquals(BlkLayout.S_OK, d.run(0, w, TIMEOUT));

                BitSet must = (BitSet) ringMust.clone();
                pages(must, d.dataAddress(0, r), BYTES);
                pages(must, d.statusAddress(0, r), 1);
                pages(must, d.statusAddress(0, w), 1);
                BitSet may = (BitSet) must.clone();
                may.or(ringMay);
                BitSet writeData = new BitSet();
                pages(writeData, d.dataAddress(0, w), BYTES);
                writeData.andNot(may);
                assertFalse(writeData.isEmpty(), "the write's data has pages nothing else of the device's writes shares");

                BitSet dirty = logging.takeDirtyPages();
                BitSet missing = (BitSet) must.clone();
                missing.andNot(dirty);
                assertTrue(missing.isEmpty(), "pages the device wrote and did not mark: " + missing + " (marked " + dirty + ")");
                BitSet extra = (BitSet) dirty.clone();
                extra.andNot(may);
                assertTrue(extra.isEmpty(), "pages marked the device did not write (the write's data among them?): " + extra);

                logging.stop();
                logging.takeDirtyPages(); // the restart's own ring writes, if any, are before this point
                int again = d.acquire(0);
                d.read(0, again, 8, BYTES);
                assertEquals(BlkLayout.S_OK, d.run(0, again, TIMEOUT));
                assertEquals(crc(MemorySegment.ofArray(disk).asSlice(8 * 512, BYTES)), crc(d.data(0, again), 0, BYTES));
                assertTrue(logging.takeDirtyPages().isEmpty(), "logging off: nothing is marked");
            } finally {
                c.backend().awaitEnd();
                device.reset();
            }
        }
    }

    /**
     * A log the back-end refuses (an empty one here) gets no reply: SET_LOG_BASE's reply is a u64 the front-end does
     * not read, so it cannot say "failed", and the connection closes rather than leave the front-end migrating with
     * a back-end that logs nothing. The front-end sees the back-end close instead of answering.
     */
    @Test
    void aRefusedLogBaseClosesTheConnection() throws Exception {
        try (BlockStore store = store(new byte[1 << 20])) {
            BlkDevice device = device(store);
            BlkDriver.Config config = config(RingFormat.SPLIT, 4);
            InProcessBackend.Connected c = InProcessBackend.start(device, "blk");
            try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), config);
                 FileDescriptor log = Memfd.create("log", 4096)) {
                VhostUserRequestFailedException e = assertThrows(VhostUserRequestFailedException.class,
                        () -> d.session().frontend().setLogBase(log, 0, 0));
                assertTrue(e.getMessage().contains("closed the connection"), e.getMessage());
            } finally {
                c.backend().awaitEnd();
                device.reset();
            }
        }
    }

    /**
     * Logging switched on and then off while reads are in flight (the ring restarts under them each time): every
     * read comes back exactly once with its data intact, in both formats. Which reads the restarts find in flight
     * depends on the device thread; the assertion holds whatever the interleaving.
     */
    @ParameterizedTest
    @EnumSource(RingFormat.class)
    void readsInFlightWhileLoggingIsSwitchedComeBackOnceIntact(RingFormat format) throws Exception {
        byte[] disk = Bytes.random(1 << 20, 17);
        try (BlockStore store = store(disk)) {
            BlkDevice device = device(store);
            BlkDriver.Config config = config(format, 8);
            InProcessBackend.Connected c = InProcessBackend.start(device, "blk");
            try (BlkDriver d = BlkDriver.start(FrontendSession.over(c.frontend()), config)) {
                DirtyLogging logging = null;
                try {
                    for (int round = 0; round < 2; round++) {
                        int[] sector = new int[8];
                        int[] back = new int[8];
                        for (int i = 0; i < 8; i++) {
                            int slot = d.acquire(0);
                            sector[slot] = (round * 8 + i) * 32;
                            d.read(0, slot, sector[slot], BYTES);
                        }
                        d.kick(0);
                        if (round == 0) {
                            logging = DirtyLogging.start(d.session()); // restarts the ring under the reads
                        } else {
                            logging.stop(); // and again
                        }
                        long deadline = System.nanoTime() + TIMEOUT.toNanos(); // a hang guard, not a timing assertion
                        int done = 0;
                        while (done < 8) {
                            assertTrue(System.nanoTime() - deadline < 0, "reads back: " + java.util.Arrays.toString(back));
                            int n = d.complete(0, (slot, status, used) -> {
                                assertEquals(BlkLayout.S_OK, status);
                                back[slot]++;
                                assertEquals(crc(MemorySegment.ofArray(disk).asSlice(sector[slot] * 512L, BYTES)),
                                        crc(d.data(0, slot), 0, BYTES), "slot " + slot + " data intact");
                            });
                            done += n;
                            if (n == 0) {
                                d.await(0, 1_000_000);
                            }
                        }
                        assertEquals("[1, 1, 1, 1, 1, 1, 1, 1]", java.util.Arrays.toString(back), "each exactly once");
                    }
                } finally {
                    if (logging != null) {
                        logging.close();
                    }
                }
            } finally {
                c.backend().awaitEnd();
                device.reset();
            }
        }
    }
}
