package io.virtio4j.devices.blk;

import io.virtio4j.devices.DirtyPages;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.devices.blk.io.BlockEngine;
import io.virtio4j.devices.blk.io.BlockStore;
import io.virtio4j.testkit.Bytes;
import io.virtio4j.testkit.NoFdLeaks;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;

import static io.virtio4j.devices.DirtyPages.pages;
import static io.virtio4j.devices.DirtyPages.marked;
import static io.virtio4j.testkit.Bytes.crc;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a blk queue marks in the dirty log, over every engine (the kernel writes a read's data, synchronously or not):
 * a read's data pages and its status byte's page, after the data is there; a write's status page but not its data
 * (read only); a GET_ID answer. A read into a page the log has no bit for breaks the queue with
 * {@link DirtyLogOverflowException} naming {@code log}, and the buffer is not returned as if logged.
 */
@ExtendWith(NoFdLeaks.class)
@ParameterizedClass
@EnumSource(BlockEngine.class)
class BlkRequestsDirtyLogTest {
    private static final int FILE_BYTES = 1 << 20;

    @Parameter
    BlockEngine engine;
    @TempDir
    Path dir;
    private BlockStore store;
    private BlkRig rig;
    private final Arena arena = Arena.ofConfined();
    private byte[] disk;

    @AfterEach
    void close() throws IOException {
        try {
            if (rig != null) {
                rig.close();
            }
            if (store != null) {
                store.close();
            }
        } finally {
            arena.close();
        }
    }

    private BlkRig rig() throws IOException {
        Path f = dir.resolve("disk.img");
        disk = Bytes.random(FILE_BYTES, 5);
        Files.write(f, disk);
        store = BlockStore.open(f.toString(), false, 512);
        rig = new BlkRig(RingFormat.SPLIT, store, engine.open(store, 16), BlkRig.WRITEBACK_FEATURES);
        return rig;
    }

    /** A log of {@code bytes} (covering {@code bytes * 8} pages of the rig's guest memory, which starts at 0). */
    private DirtyLog log(long bytes) {
        return DirtyPages.log(arena, bytes);
    }

    /** {@code n} bytes of the rig's memory from the start of a page no earlier allocation touches. */
    private static long pageAligned(BlkRig r, long n) {
        long at = r.alloc(1); // the rig allocates in 512-byte steps
        long pad = (4096 - ((at + 512) & 4095)) & 4095;
        if (pad > 0) {
            r.alloc(pad);
        }
        long p = r.alloc(n);
        assertEquals(0, p % 4096, "page-aligned");
        return p;
    }

    @Test
    void aReadMarksItsDataAndStatusPagesAndAWriteOnlyItsStatusPage() throws IOException {
        BlkRig r = rig();
        DirtyLog log = log(1024); // 8192 pages: 32 MiB, all of the rig's memory
        r.log(log);
        // the read's data across a page boundary (two pieces), each status alone in a page of its own
        long readHeader = r.header(BlkLayout.T_IN, 8);
        long readData = pageAligned(r, 3 * 4096);
        long readStatus = pageAligned(r, 1);
        long writeData = pageAligned(r, 2 * 4096);
        long writeHeader = r.header(BlkLayout.T_OUT, 100);
        long writeStatus = pageAligned(r, 1);

        ScatterGather read = new ScatterGather(4).readable(readHeader, 16).writable(readData + 2048, 4096)
                .writable(readData + 2048 + 4096, 2048).writable(readStatus, 1);
        assertEquals(6144 + 1, r.one(read));
        assertEquals(BlkLayout.S_OK, r.status(readStatus));
        assertEquals(crc(MemorySegment.ofArray(disk).asSlice(8 * 512, 6144)), crc(r.mem, readData + 2048, 6144),
                "read data intact");
        ScatterGather write = new ScatterGather(4).readable(writeHeader, 16).readable(writeData, 2 * 4096)
                .writable(writeStatus, 1);
        assertEquals(1, r.one(write));
        assertEquals(BlkLayout.S_OK, r.status(writeStatus));

        BitSet expected = new BitSet();
        pages(expected, readData + 2048, 6144);
        pages(expected, readStatus, 1);
        pages(expected, writeStatus, 1);
        BitSet writeDataPages = new BitSet();
        pages(writeDataPages, writeData, 2 * 4096);
        assertTrue(!writeDataPages.intersects(expected), "the write's data pages share none with what the device writes");
        assertEquals(expected, marked(log));
    }

    @Test
    void getIdMarksTheIdsPageAndTheStatusPage() throws IOException {
        BlkRig r = rig();
        DirtyLog log = log(1024);
        r.log(log);
        long h = r.header(BlkLayout.T_GET_ID, 0);
        long id = pageAligned(r, BlkLayout.ID_BYTES);
        long s = pageAligned(r, 1);
        assertEquals(BlkLayout.ID_BYTES + 1, r.one(new ScatterGather(3).readable(h, 16).writable(id, BlkLayout.ID_BYTES)
                .writable(s, 1)));
        BitSet expected = new BitSet();
        pages(expected, id, BlkLayout.ID_BYTES);
        pages(expected, s, 1);
        assertEquals(expected, marked(log));
    }

    @Test
    void aReadIntoAPageTheLogDoesNotCoverBreaksTheQueueNamingTheLog() throws IOException {
        BlkRig r = rig();
        long h = r.header(BlkLayout.T_IN, 0);
        long s = r.alloc(1);
        r.alloc(64 * 1024); // past what a 1-byte log covers (8 pages: 32 KiB)
        long data = r.alloc(4096);
        assertTrue(data >= 8 * DirtyLog.PAGE_SIZE && s < 8 * DirtyLog.PAGE_SIZE);
        DirtyLog log = log(1);
        r.log(log);
        r.post(new ScatterGather(3).readable(h, 16).writable(data, 4096).writable(s, 1));
        for (int i = 0; i < 10_000 && !r.device.isBroken(); i++) {
            r.requests.pass(16);
            Thread.onSpinWait();
        }
        assertTrue(r.device.isBroken(), "the queue breaks");
        DirtyLogOverflowException e = assertInstanceOf(DirtyLogOverflowException.class, r.device.violation());
        assertEquals("log", e.field());
        assertEquals(data >>> DirtyLog.PAGE_SHIFT, e.value(), "names the first page without a bit");
        assertNull(r.driver.pollUsed(), "the buffer is not returned as if its data were logged");
        assertEquals(0xEE, r.status(s), "no status was written either");
    }

    /**
     * A read that completes after its queue broke (on an earlier read's data outside the log) still has its data
     * marked: the kernel wrote those pages, though the buffer never comes back.
     */
    @Test
    void aReadCompletingAfterItsQueueBrokeIsStillMarked() throws IOException {
        BlkRig r = rig();
        long badHeader = r.header(BlkLayout.T_IN, 0);
        long badStatus = r.alloc(1);
        long goodHeader = r.header(BlkLayout.T_IN, 16);
        long goodData = pageAligned(r, 4096);
        long goodStatus = r.alloc(1);
        r.alloc(64 * 1024); // past what a 1-byte log covers (8 pages: 32 KiB)
        long badData = r.alloc(4096);
        assertTrue(badData >= 8 * DirtyLog.PAGE_SIZE && goodData + 4096 <= 8 * DirtyLog.PAGE_SIZE);
        DirtyLog log = log(1);
        r.log(log);
        r.post(new ScatterGather(3).readable(badHeader, 16).writable(badData, 4096).writable(badStatus, 1));
        r.post(new ScatterGather(3).readable(goodHeader, 16).writable(goodData, 4096).writable(goodStatus, 1));
        for (int i = 0; i < 10_000 && (r.requests.inFlight() > 0 || !r.device.isBroken()); i++) {
            r.requests.pass(16);
            Thread.onSpinWait();
        }
        assertTrue(r.device.isBroken(), "the queue breaks");
        assertEquals(0, r.requests.inFlight(), "both reads done");
        assertEquals(crc(MemorySegment.ofArray(disk).asSlice(16 * 512, 4096)), crc(r.mem, goodData, 4096),
                "the second read's data is in guest memory");
        assertTrue(log.isDirty(goodData >>> DirtyLog.PAGE_SHIFT), "and its page marked");
    }
}
