package io.virtio4j.devices.blk;

import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.layout.InflightLayout;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.layout.SplitRingAreas;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.os.Poll;
import io.virtio4j.testkit.DiskImages;
import io.virtio4j.testkit.NoFdLeaks;
import io.virtio4j.vhost.backend.InProcessBackend;
import io.virtio4j.vhost.frontend.VhostUserFrontend;
import io.virtio4j.vhost.frontend.VhostUserRequestFailedException;
import io.virtio4j.vhost.notify.EventFdNotifier;
import io.virtio4j.vhost.protocol.InflightDescription;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.virtio4j.testkit.Bytes.crc;
import static io.virtio4j.testkit.Bytes.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A front-end that shrinks a mapped memfd under a running device (issue 12): the JVM survives; the queue whose ring
 * is in that memory breaks and its error eventfd is signalled (SET_VRING_ERR); the other queue goes on serving, and
 * its requests whose data is in the shrunk memory are answered IOERR (the kernel's preadv, pwritev or io_uring get
 * EFAULT there); once the front-end gives the memory back and restarts the ring, the same queue thread serves it
 * again. Two queues over a raw front-end: queue 0's ring, headers and statuses in memfd A, queue 1's ring in
 * memfd B, which is truncated.
 */
@ExtendWith(NoFdLeaks.class)
@ParameterizedClass
@EnumSource(BlockEngine.class)
class GuestMemoryFaultTest {
    private static final int QSZ = 64;
    private static final long MEM = 1L << 20;
    private static final long GPA_B = 16L << 20;
    private static final long USER_A = 0x7000_0000_0000L;
    private static final long USER_B = 0x7100_0000_0000L;
    private static final int FILE_BYTES = 1 << 20;
    /** A hang guard, not a timing assertion: a request answers in microseconds. */
    private static final long PATIENCE_NANOS = TimeUnit.SECONDS.toNanos(30);

    @Parameter
    BlockEngine engine;
    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();
    private BlockStore store;

    @AfterEach
    void close() {
        arena.close();
        if (store != null) {
            store.close();
        }
    }

    /** One queue as the driver sees it: its ring in one memfd's mapping, a bump allocator over the rest. */
    private static final class Queue implements AutoCloseable {
        final MemorySegment mem;
        final long gpaBase;
        final long userBase;
        final RingSegment ring;
        final EventFdNotifier kick = new EventFdNotifier();
        final EventFd call = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
        final EventFd err = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
        DriverQueue driver;
        long next;

        Queue(MemorySegment mem, long gpaBase, long userBase) {
            this.mem = mem;
            this.gpaBase = gpaBase;
            this.userBase = userBase;
            this.ring = RingSegment.carve(mem, RingFormat.SPLIT, QSZ, 4096);
            this.next = ring.dataOffset();
        }

        long user(MemorySegment area) {
            return userBase + (area.address() - mem.address());
        }

        /** {@code n} bytes of this queue's memory; returns the offset in {@link #mem}. */
        long alloc(long n) {
            long at = next;
            next = (next + n + 511) & ~511L;
            return at;
        }

        @Override
        public void close() {
            kick.close();
            call.close();
            err.close();
        }
    }

    @Test
    void shrinkingTheMemoryOfOneQueueBreaksThatQueueOnlyAndItsDataRequestsAreIoErrors() throws Exception {
        Path f = DiskImages.sparse(dir.resolve("disk.img"), FILE_BYTES);
        store = BlockStore.open(f.toString(), false, 512);
        BlkDevice device = new BlkDevice(store, BlkDevice.Options.of(2, engine, 16));
        InProcessBackend.Connected c = InProcessBackend.start(device, "blk-fault-" + engine);
        try (FileDescriptor a = Memfd.create("fault-a", MEM); FileDescriptor b = Memfd.create("fault-b", MEM);
             VhostUserFrontend fe = c.frontend();
             Queue q0 = new Queue(Mmap.mapShared(a, 0, MEM, arena), 0, USER_A);
             Queue q1 = new Queue(Mmap.mapShared(b, 0, MEM, arena), GPA_B, USER_B)) {
            long features = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | BlkLayout.bit(BlkLayout.F_FLUSH)
                    | BlkLayout.bit(BlkLayout.F_MQ) | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
            assertEquals(features, fe.getFeatures() & features, "the device offers what the test negotiates");
            fe.setFeatures(features);
            fe.setProtocolFeatures(ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK) | ProtocolFeatures.bit(ProtocolFeatures.MQ));
            fe.setOwner();
            fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER_A, 0, a),
                    new VhostUserFrontend.Region(GPA_B, MEM, USER_B, 0, b)));
            startRing(fe, 0, q0, features);
            startRing(fe, 1, q1, features);

            // both queues serve
            byte[] one = random(8192, 1);
            assertEquals(BlkLayout.S_OK, write(q0, q0, 0, one));
            assertEquals(BlkLayout.S_OK, write(q1, q1, 64, random(4096, 2)));

            Memfd.truncate(b, 0); // the front-end takes memfd B away under the mapping

            // queue 0's requests whose data is in B: the kernel cannot reach it, the device answers IOERR
            assertEquals(BlkLayout.S_IOERR, read(q0, q1, 0, 4096, null), "a read into the shrunk memory");
            assertEquals(BlkLayout.S_IOERR, write(q0, q1, 0, null), "a write from the shrunk memory");
            assertEquals(crc(one), crc(Arrays.copyOf(Files.readAllBytes(f), one.length)), "the failed write changed nothing");

            // queue 1's ring is in B: a kick makes its thread read it, and fault
            q1.kick.signal();
            assertTrue(new Poll(q1.err.fileDescriptor(), Poll.POLLIN).await(PATIENCE_NANOS) != 0,
                    "queue 1's error eventfd was not signalled");
            assertEquals(0, new Poll(q0.err.fileDescriptor(), Poll.POLLIN).await(0), "queue 0 reported broken");

            // queue 0 goes on: a write and a read back, checksummed
            byte[] two = random(16384, 3);
            assertEquals(BlkLayout.S_OK, write(q0, q0, 32, two));
            byte[] back = new byte[two.length];
            assertEquals(BlkLayout.S_OK, read(q0, q0, 32, two.length, back));
            assertEquals(crc(two), crc(back));

            // the front-end gives B back (zeroed) and restarts ring 1: the same queue thread serves it again
            fe.getVringBase(1);
            q1.err.tryRead();
            // a restart while the memory is still gone: refused (the back-end reads the used index there), and the
            // connection goes on
            VhostUserRequestFailedException refused = assertThrows(VhostUserRequestFailedException.class,
                    () -> sendRing(fe, 1, q1));
            assertTrue(refused.getMessage().contains("refused by the back-end"), refused.getMessage());
            fe.getVringBase(1);
            Memfd.truncate(b, MEM);
            startRing(fe, 1, q1, features);
            byte[] three = random(4096, 4);
            assertEquals(BlkLayout.S_OK, write(q1, q1, 96, three));
            byte[] back1 = new byte[three.length];
            assertEquals(BlkLayout.S_OK, read(q1, q1, 96, three.length, back1));
            assertEquals(crc(three), crc(back1));
            assertEquals(0, new Poll(q1.err.fileDescriptor(), Poll.POLLIN).await(0), "the restarted ring reported broken");
        }
        c.backend().awaitEnd(); // the connection ends cleanly once the front-end closes
    }

    /**
     * The inflight area shrunk under a running device: an area a DPDK or SPDK back-end allocated is not sealed, and a
     * VM moving from it to virtio4j keeps it, so its front-end can cut it. The area here is such a one (a plain
     * memfd), for two queues of 1024 (QEMU's queue-size) under rings of 64; it is cut so that region 0 keeps the
     * entries its ring uses and region 1 is gone. The JVM survives; queue 1 breaks at its first store into the
     * region (its error eventfd); queue 0 goes on serving, data intact.
     */
    @Test
    void shrinkingAnUnsealedInflightAreaBreaksOnlyTheQueueWhoseRegionIsGone() throws Exception {
        int areaQueueSize = 1024;
        long region = InflightLayout.queueRegionBytes(RingFormat.SPLIT, areaQueueSize);
        long areaBytes = InflightLayout.areaBytes(RingFormat.SPLIT, 2, areaQueueSize);
        long keep = region / Mmap.pageSize() * Mmap.pageSize(); // every page of region 1 goes
        assumeTrue(keep >= InflightLayout.queueRegionBytes(RingFormat.SPLIT, QSZ), "pages too large to keep region 0's entries");
        Path f = DiskImages.sparse(dir.resolve("disk.img"), FILE_BYTES);
        store = BlockStore.open(f.toString(), false, 512);
        BlkDevice device = new BlkDevice(store, BlkDevice.Options.of(2, engine, 16));
        InProcessBackend.Connected c = InProcessBackend.start(device, "blk-inflight-fault-" + engine);
        try (FileDescriptor a = Memfd.create("fault-a", MEM); FileDescriptor b = Memfd.create("fault-b", MEM);
             FileDescriptor area = Memfd.create("dpdk-inflight", areaBytes); // no seals, as DPDK makes it
             VhostUserFrontend fe = c.frontend();
             Queue q0 = new Queue(Mmap.mapShared(a, 0, MEM, arena), 0, USER_A);
             Queue q1 = new Queue(Mmap.mapShared(b, 0, MEM, arena), GPA_B, USER_B)) {
            long features = VirtioFeatures.bit(VirtioFeatures.VERSION_1) | BlkLayout.bit(BlkLayout.F_FLUSH)
                    | BlkLayout.bit(BlkLayout.F_MQ) | ProtocolFeatures.bit(ProtocolFeatures.VHOST_USER_F_PROTOCOL_FEATURES);
            fe.setFeatures(features);
            fe.setProtocolFeatures(ProtocolFeatures.bit(ProtocolFeatures.REPLY_ACK) | ProtocolFeatures.bit(ProtocolFeatures.MQ)
                    | ProtocolFeatures.bit(ProtocolFeatures.INFLIGHT_SHMFD));
            fe.setOwner();
            fe.setMemTable(List.of(new VhostUserFrontend.Region(0, MEM, USER_A, 0, a),
                    new VhostUserFrontend.Region(GPA_B, MEM, USER_B, 0, b)));
            fe.setInflightFd(new VhostUserFrontend.InflightArea(new InflightDescription(areaBytes, 0, 2, areaQueueSize), area));
            startRing(fe, 0, q0, features);
            startRing(fe, 1, q1, features);

            byte[] one = random(8192, 5);
            assertEquals(BlkLayout.S_OK, write(q0, q0, 0, one));
            assertEquals(BlkLayout.S_OK, write(q1, q1, 64, random(4096, 6)));

            Memfd.truncate(area, keep); // the front-end cuts the area under the back-end's mapping

            // queue 1 takes a request: recording it in its region faults, and breaks the queue only
            long h = header(q1, BlkLayout.T_OUT, 128);
            q1.driver.add(new ScatterGather(2).readable(h, 16).writable(q1.gpaBase + q1.alloc(1), 1), new Object());
            q1.driver.kick();
            assertTrue(new Poll(q1.err.fileDescriptor(), Poll.POLLIN).await(PATIENCE_NANOS) != 0,
                    "queue 1's error eventfd was not signalled");
            assertEquals(0, new Poll(q0.err.fileDescriptor(), Poll.POLLIN).await(0), "queue 0 reported broken");

            // queue 0, its region intact, goes on: a write and a read back, checksummed
            byte[] two = random(16384, 7);
            assertEquals(BlkLayout.S_OK, write(q0, q0, 32, two));
            byte[] back = new byte[two.length];
            assertEquals(BlkLayout.S_OK, read(q0, q0, 32, two.length, back));
            assertEquals(crc(two), crc(back));
            byte[] first = new byte[one.length];
            assertEquals(BlkLayout.S_OK, read(q0, q0, 0, one.length, first));
            assertEquals(crc(one), crc(first), "the first write is intact");
        }
        c.backend().awaitEnd(); // the connection ends cleanly once the front-end closes
    }

    /** Starts ring {@code index} over {@code q}'s memory, from a fresh driver at index 0. */
    private static void startRing(VhostUserFrontend fe, int index, Queue q, long features) {
        q.driver = DriverQueue.over(q.ring.areas(), DriverOptions.defaults().forFeatures(features), q.kick);
        sendRing(fe, index, q);
    }

    /** The messages that start ring {@code index} over {@code q}'s memory at index 0 (touching none of it here). */
    private static void sendRing(VhostUserFrontend fe, int index, Queue q) {
        SplitRingAreas areas = (SplitRingAreas) q.ring.areas();
        fe.setVringNum(index, QSZ);
        fe.setVringBase(index, 0);
        fe.setVringAddr(index, q.user(areas.descTable()), q.user(areas.usedRing()), q.user(areas.availRing()));
        fe.setVringCall(index, q.call);
        fe.setVringErr(index, q.err);
        fe.setVringKick(index, q.kick.eventFd());
        fe.setVringEnable(index, true);
    }

    /** A write of {@code data} (or, when null, of 4096 bytes left as they are) at {@code sector}: its status. */
    private int write(Queue q, Queue dataIn, long sector, byte[] data) throws InterruptedException {
        int n = data == null ? 4096 : data.length;
        long h = header(q, BlkLayout.T_OUT, sector);
        long d = dataIn.alloc(n);
        if (data != null) {
            MemorySegment.copy(data, 0, dataIn.mem, ValueLayout.JAVA_BYTE, d, n);
        }
        long s = q.alloc(1);
        q.mem.set(ValueLayout.JAVA_BYTE, s, (byte) 0xEE);
        serve(q, new ScatterGather(3).readable(h, 16).readable(dataIn.gpaBase + d, n).writable(q.gpaBase + s, 1));
        return Byte.toUnsignedInt(q.mem.get(ValueLayout.JAVA_BYTE, s));
    }

    /** A read of {@code n} bytes at {@code sector} into {@code dataIn}'s memory, copied to {@code into}: its status. */
    private int read(Queue q, Queue dataIn, long sector, int n, byte[] into) throws InterruptedException {
        long h = header(q, BlkLayout.T_IN, sector);
        long d = dataIn.alloc(n);
        long s = q.alloc(1);
        q.mem.set(ValueLayout.JAVA_BYTE, s, (byte) 0xEE);
        serve(q, new ScatterGather(3).readable(h, 16).writable(dataIn.gpaBase + d, n).writable(q.gpaBase + s, 1));
        if (into != null) {
            MemorySegment.copy(dataIn.mem, ValueLayout.JAVA_BYTE, d, into, 0, n);
        }
        return Byte.toUnsignedInt(q.mem.get(ValueLayout.JAVA_BYTE, s));
    }

    /** A request header in {@code q}'s memory; returns its guest-physical address. */
    private static long header(Queue q, int type, long sector) {
        long at = q.alloc(16);
        q.mem.set(BlkRig.LE_INT, at, type);
        q.mem.set(BlkRig.LE_INT, at + 4, 0);
        q.mem.set(BlkRig.LE_LONG, at + 8, sector);
        return q.gpaBase + at;
    }

    /** Posts {@code sg} on {@code q}, kicks, and waits (bounded) for it to come back used. */
    private static void serve(Queue q, ScatterGather sg) throws InterruptedException {
        Object token = new Object();
        q.driver.add(sg, token);
        q.driver.kick();
        Poll calls = new Poll(q.call.fileDescriptor(), Poll.POLLIN);
        long deadline = System.nanoTime() + PATIENCE_NANOS;
        Object back;
        while ((back = q.driver.pollUsed()) == null) {
            assertTrue(System.nanoTime() - deadline < 0, "the request did not come back");
            calls.await(TimeUnit.MILLISECONDS.toNanos(100));
            q.call.tryRead();
        }
        assertNotNull(back);
        assertEquals(token, back, "the buffer that came back");
    }
}
