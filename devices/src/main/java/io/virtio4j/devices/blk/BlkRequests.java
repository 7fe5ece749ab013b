package io.virtio4j.devices.blk;

import io.virtio4j.core.device.DescriptorChain;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.error.DirtyLogOverflowException;
import io.virtio4j.core.error.VirtqueueException;
import io.virtio4j.core.feature.VirtioFeatures;
import io.virtio4j.core.memory.DirtyLog;
import io.virtio4j.core.memory.GuestMemory;
import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;
import io.virtio4j.os.Poll;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.logging.Logger;

/**
 * The requests of one virtio-blk queue, on its thread: pops them, checks each against the rules of the request
 * format (everything in the chain is the driver's and hostile), hands the valid ones to the queue's
 * {@link BlockIo} with their data straight in guest memory, and when each finishes writes its status byte and
 * pushes it used; many are in flight at once (the engine's depth), and they finish in any order.
 *
 * <h2>Layout</h2>
 * Any layout (VERSION_1): the 16-byte header is the first 16 readable bytes, wherever the descriptors split them;
 * the status is the last writable byte. For IN the data is the rest of the writable part, for OUT the rest of the
 * readable part. Rules, each answered IOERR ({@link BlkStats#invalid()}) unless said otherwise:
 * <ul>
 *   <li>no writable byte at all: the request cannot be answered; it is pushed used with length 0 and counted
 *       {@link BlkStats#malformed()}; the queue goes on (the driver broke its own request, not the ring);</li>
 *   <li>fewer than 16 readable bytes (the header short, or writable);</li>
 *   <li>IN with readable data, OUT/FLUSH/DISCARD/WRITE_ZEROES with more than the status writable;</li>
 *   <li>IN/OUT data or sector not a multiple of the logical block size (512 bytes, or {@code blk_size} when that is
 *       4096: what QEMU checks too), a range past the capacity (overflow-safe), more data pieces than the iovecs
 *       hold ({@link #MAX_SEGMENTS});</li>
 *   <li>OUT, DISCARD or WRITE_ZEROES on a read-only device (nothing is written);</li>
 *   <li>FLUSH with a non-zero sector (the driver MUST set 0) or with data;</li>
 *   <li>GET_ID with fewer than 20 data bytes, or readable data;</li>
 *   <li>DISCARD/WRITE_ZEROES with a segment part that is not whole segments, 0 segments or more than one (the
 *       {@code max_*_seg} offered), 0 sectors or more than {@code max_*_sectors}, a range not aligned to the block
 *       size or past the capacity;</li>
 *   <li>UNSUPP: unknown types (including legacy SCSI and the BARRIER flag), DISCARD/WRITE_ZEROES when not
 *       negotiated, unknown segment flags, and UNMAP on DISCARD.</li>
 * </ul>
 * Used length: data + 1 for an IN that reached the engine (whatever its outcome: the kernel may have written the
 * buffer), 21 for a GET_ID answered OK, 1 otherwise.
 *
 * <h2>Durability</h2>
 * A write (OUT, DISCARD, WRITE_ZEROES) is completed only once durable when the driver negotiated neither FLUSH nor
 * CONFIG_WCE, or CONFIG_WCE with {@code writeback} 0: the engine then flushes after it, and the request completes
 * when the flush does.
 *
 * <h2>Stopping</h2>
 * {@link #drain()} waits for every operation in the engine's hands (the kernel may write guest memory until it is
 * reaped), completes them and publishes: nothing is lost. A broken queue still has its operations reaped; their
 * results are dropped (nothing can be pushed on it).
 */
final class BlkRequests {
    private static final Logger LOG = Logger.getLogger(BlkRequests.class.getName());
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /**
     * Most data pieces of one request: each of the {@code seg_max} data segments a driver may use can cross a
     * boundary between adjacent regions of the front-end's memory table (DIMMs, virtio-mem, NUMA backends), and
     * reaches us as one element per region, so twice that; plus the two a header and a status may split off. A
     * segment is at most SIZE_MAX (1 MiB) and regions are larger than that in practice, so two pieces each is
     * what a driver can legally cause; a chain split finer than this is answered IOERR. 16 bytes an iovec.
     */
    static final int MAX_SEGMENTS = 2 * BlkDevice.SEG_MAX + 2;
    private static final int T_FLUSH_OUT = 5;
    private static final long DRAIN_POLL_NANOS = 100_000_000L;
    /**
     * The most bytes (to read, write, zero or discard) one pass takes on; the request that crosses it still goes
     * (any request is taken whole). The synchronous engine does a pass's I/O right in it, and the weight alone lets
     * a pass take 64 requests of up to 4 GiB each: the queue thread would answer its mailbox (a ring stop) only
     * minutes later, and be taken for stuck.
     */
    static final long PASS_BYTES = 64L << 20;

    private final int index;
    private final BlockIo io;
    private final WriteCache cache;
    private final boolean readOnly;
    private final long capacitySectors;
    private final int blockSectorsMask;
    private final long maxSegmentSectors;
    private final BlkStats stats;
    private final MemorySegment header;
    private final MemorySegment segment;
    private final MemorySegment id;

    // ---- request slots: one per operation the engine may hold; the slot index is the engine's tag ----
    private final IoVecs[] iov;
    private final int[] head;
    private final MemorySegment[] statusRegion;
    private final long[] statusOffset;
    private final long[] used;
    private final int[] kind;
    private final long[] bytes;
    /** How many iovecs of {@link #iov} each slot's operation uses (a read's are marked in the dirty log). */
    private final int[] pieces;
    private final boolean[] syncAfter;
    private final int[] free;
    private int freeCount;
    /** Slots whose write finished and that now need the write-through flush. */
    private final int[] needSync;
    private int needSyncCount;
    private final BlockIo.Completion onCompletion = this::completed;

    private DeviceQueue queue;
    private long features;
    /** The attached ring's dirty log and the memory it marks, or null: not logging (one null check per write). */
    private DirtyLog log;
    private GuestMemory memory;
    private int pushed;
    /** Bytes taken on in the current pass (see {@link #PASS_BYTES}). */
    private long passBytes;

    // per-pass counts, folded into stats at the end of a pass
    private long requests;
    private long reads;
    private long writes;
    private long flushes;
    private long discards;
    private long writeZeroes;
    private long getIds;
    private long bytesRead;
    private long bytesWritten;
    private long writeThroughSyncs;
    private long ioErrors;
    private long invalid;
    private long unsupported;
    private long malformed;
    private long notifications;
    private long suppressed;
    private long submitted;
    private long completions;

    /**
     * @param arena    the queue thread's arena: request slots and staging live there
     * @param id       the GET_ID answer, 20 bytes
     * @param capacity the store's size in bytes (whole blocks)
     */
    BlkRequests(int index, Arena arena, BlockIo io, WriteCache cache, boolean readOnly, long capacity, int blockSize,
                byte[] id, BlkStats stats) {
        this.index = index;
        this.io = io;
        this.cache = cache;
        this.readOnly = readOnly;
        this.capacitySectors = capacity >>> BlkLayout.SECTOR_SHIFT;
        this.blockSectorsMask = (blockSize >>> BlkLayout.SECTOR_SHIFT) - 1;
        this.maxSegmentSectors = BlkDevice.MAX_DISCARD_SECTORS;
        this.stats = stats;
        this.header = arena.allocate(BlkLayout.HEADER_BYTES, 8);
        this.segment = arena.allocate(BlkLayout.SEGMENT_BYTES, 8);
        this.id = arena.allocate(BlkLayout.ID_BYTES, 8);
        MemorySegment.copy(id, 0, this.id, ValueLayout.JAVA_BYTE, 0, Math.min(id.length, BlkLayout.ID_BYTES));
        int depth = io.depth();
        iov = new IoVecs[depth];
        head = new int[depth];
        statusRegion = new MemorySegment[depth];
        statusOffset = new long[depth];
        used = new long[depth];
        kind = new int[depth];
        bytes = new long[depth];
        pieces = new int[depth];
        syncAfter = new boolean[depth];
        free = new int[depth];
        needSync = new int[depth];
        for (int i = 0; i < depth; i++) {
            iov[i] = IoVecs.allocate(arena, MAX_SEGMENTS);
            free[freeCount++] = depth - 1 - i;
        }
    }

    /**
     * Serves {@code q} from now on, with the features its ring was started with, marking what it writes into guest
     * memory in {@code dirtyLog} (null: not logging), whose pages are those of {@code guestMemory}.
     */
    void attach(DeviceQueue q, long ringFeatures, DirtyLog dirtyLog, GuestMemory guestMemory) {
        queue = q;
        features = ringFeatures;
        log = dirtyLog;
        memory = guestMemory;
    }

    /** Lets the queue go: call {@link #drain()} first. */
    void detach() {
        queue = null;
        log = null;
        memory = null;
    }

    /**
     * Marks host memory [{@code address}, +{@code len}) of the guest's in the dirty log, after the bytes are there
     * and before the buffer is pushed used. A log without a bit for it breaks the queue (the front-end sized its log
     * too small): false, and nothing more goes back on it.
     */
    private boolean logged(DeviceQueue q, long address, long len) {
        try {
            log.markHost(memory, address, len);
            return true;
        } catch (DirtyLogOverflowException e) {
            return logOverflow(q, e);
        }
    }

    boolean hasFreeSlot() {
        return freeCount > 0;
    }

    int inFlight() {
        return io.inFlight();
    }

    /**
     * One bounded pass: completes what finished, takes up to {@code weight} new requests (fewer when every slot is
     * busy or once they add up to {@link #PASS_BYTES}, none when {@code weight} is 0), starts them, completes what
     * finished meanwhile and publishes. Returns the requests taken plus those completed (at least 1 while a
     * synchronous engine holds work).
     */
    int pass(int weight) {
        int n = complete();
        DeviceQueue q = queue;
        if (q != null && !q.isBroken() && weight > 0) {
            int taken = 0;
            passBytes = 0;
            try {
                while (taken < weight && freeCount > 0 && passBytes < PASS_BYTES) {
                    DescriptorChain c = q.pop();
                    if (c == null) {
                        break;
                    }
                    taken++;
                    accept(q, c);
                }
            } catch (VirtqueueException e) {
                LOG.warning("blk queue " + index + " broken: " + e.getMessage());
            }
            n += taken;
        }
        // Also when nothing was taken: what an earlier submit left queued (io_uring short of kernel memory).
        io.submit();
        n += complete();
        publish();
        fold();
        if (n == 0 && io.completionFd() == null && io.inFlight() > 0) {
            // A synchronous engine holding work (a step of zeros written, to be reaped) gives no wake-up for it:
            // report work, so the thread passes again (serving its mailbox in between) rather than sleeping.
            n = 1;
        }
        return n;
    }

    /**
     * Waits for every operation in the engine's hands to finish, completes each and publishes: before the queue's
     * memory may go (stop, reset). Not a hot path.
     */
    void drain() {
        complete();
        EventFd done = io.completionFd();
        Poll poll = done == null ? null : new Poll(done.fileDescriptor(), Poll.POLLIN);
        while (io.inFlight() > 0 || needSyncCount > 0) {
            io.submit(); // what an earlier submit left queued would otherwise never finish
            if (poll != null) {
                poll.await(DRAIN_POLL_NANOS);
                done.tryRead();
            } else {
                Thread.onSpinWait();
            }
            complete();
        }
        publish();
        fold();
    }

    /** Reaps finished operations, starting write-through flushes, until nothing more finished now. */
    private int complete() {
        int n = 0;
        while (true) {
            int r = io.reap(onCompletion);
            if (needSyncCount > 0) {
                for (int i = 0; i < needSyncCount; i++) {
                    if (!io.queue(needSync[i], BlockIo.FLUSH, 0, 0, null, 0, 0)) {
                        throw new IllegalStateException("engine full with a slot free"); // a slot holds one operation
                    }
                }
                writeThroughSyncs += needSyncCount;
                submitted += needSyncCount;
                needSyncCount = 0;
                io.submit();
                n += r;
                continue;
            }
            n += r;
            if (r == 0) {
                return n;
            }
        }
    }

    private void completed(int slot, long result) {
        completions++;
        if (log != null && kind[slot] == BlkLayout.T_IN) {
            // The kernel wrote the data into guest memory (part of it, maybe, when the read failed: marked all the
            // same, the pages are changed): mark it now that it is there, before finish pushes the buffer. On a
            // broken queue too: the buffer will not come back, but its pages changed and the log is still the ring's.
            DeviceQueue q = queue;
            if (q != null) {
                loggedRead(q, slot);
            }
        }
        if (result < 0) {
            ioErrors++;
            finish(slot, BlkLayout.S_IOERR);
            return;
        }
        if (syncAfter[slot]) {
            syncAfter[slot] = false;
            needSync[needSyncCount++] = slot;
            return;
        }
        switch (kind[slot]) {
            case BlkLayout.T_IN -> bytesRead += bytes[slot];
            case BlkLayout.T_OUT -> bytesWritten += bytes[slot];
            default -> { }
        }
        finish(slot, BlkLayout.S_OK);
    }

    private void finish(int slot, int status) {
        MemorySegment region = statusRegion[slot];
        statusRegion[slot] = null; // do not keep guest memory reachable
        syncAfter[slot] = false;
        free[freeCount++] = slot;
        // Last: writing the status may fault (a front-end that shrank the region's file: QueueRunner breaks the
        // queue and goes on), and the slot must be free again by then.
        answer(head[slot], region, statusOffset[slot], status, used[slot]);
    }

    /** Writes the status and pushes the buffer used (unless the queue broke meanwhile: then nothing can go back). */
    private void answer(int id, MemorySegment region, long offset, int status, long usedLength) {
        DeviceQueue q = queue;
        if (q == null || q.isBroken()) {
            return;
        }
        region.set(ValueLayout.JAVA_BYTE, offset, (byte) status);
        if (log != null && !logged(q, region.address() + offset, 1)) {
            return;
        }
        q.pushUsed(id, usedLength); // the publication orders the status byte before the used entry
        pushed++;
    }

    private void publish() {
        DeviceQueue q = queue;
        if (pushed > 0 && q != null && !q.isBroken()) {
            switch (q.flushUsedOutcome()) {
                case DeviceQueue.FLUSH_NOTIFIED -> notifications++;
                case DeviceQueue.FLUSH_SUPPRESSED -> suppressed++;
                default -> { }
            }
        }
        pushed = 0;
    }

    /** Checks one request and answers it at once or hands it to the engine. */
    private void accept(DeviceQueue q, DescriptorChain c) {
        requests++;
        long writable = c.writableBytes();
        if (writable == 0) {
            malformed++;
            q.pushUsed(c.head(), 0);
            pushed++;
            return;
        }
        int last = c.count() - 1;
        MemorySegment sRegion = c.region(last);
        long sOffset = c.offset(last) + c.length(last) - 1;
        long readable = c.readableBytes();
        if (readable < BlkLayout.HEADER_BYTES) {
            refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
            return;
        }
        c.gather(0, header, 0, BlkLayout.HEADER_BYTES);
        int type = header.get(LE_INT, BlkLayout.HEADER_TYPE);
        long sector = header.get(LE_LONG, BlkLayout.HEADER_SECTOR);
        switch (type) {
            case BlkLayout.T_IN -> transfer(c, sRegion, sOffset, BlkLayout.T_IN, sector,
                    readable == BlkLayout.HEADER_BYTES, writable - 1);
            case BlkLayout.T_OUT -> transfer(c, sRegion, sOffset, BlkLayout.T_OUT, sector,
                    writable == 1 && !readOnly, readable - BlkLayout.HEADER_BYTES);
            case BlkLayout.T_FLUSH, T_FLUSH_OUT -> {
                if (sector != 0 || readable != BlkLayout.HEADER_BYTES || writable != 1) {
                    refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
                } else {
                    flushes++;
                    start(c, sRegion, sOffset, BlkLayout.T_FLUSH, BlockIo.FLUSH, 0, 0, 1, 0, false);
                }
            }
            case BlkLayout.T_GET_ID -> {
                if (readable != BlkLayout.HEADER_BYTES || writable - 1 < BlkLayout.ID_BYTES) {
                    refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
                } else {
                    getIds++;
                    c.scatter(0, id, 0, BlkLayout.ID_BYTES);
                    if (log != null && !loggedWritable(q, c, BlkLayout.ID_BYTES)) {
                        return;
                    }
                    answer(c.head(), sRegion, sOffset, BlkLayout.S_OK, BlkLayout.ID_BYTES + 1);
                }
            }
            case BlkLayout.T_DISCARD -> ranges(c, sRegion, sOffset, BlkLayout.T_DISCARD, BlkLayout.F_DISCARD,
                    readable, writable);
            case BlkLayout.T_WRITE_ZEROES -> ranges(c, sRegion, sOffset, BlkLayout.T_WRITE_ZEROES,
                    BlkLayout.F_WRITE_ZEROES, readable, writable);
            default -> refuse(c, sRegion, sOffset, BlkLayout.S_UNSUPP);
        }
    }

    /** IN or OUT of {@code data} bytes at {@code sector}; {@code layoutOk} says the other part is the status only. */
    private void transfer(DescriptorChain c, MemorySegment sRegion, long sOffset, int type, long sector,
                          boolean layoutOk, long data) {
        if (!layoutOk || !inRange(sector, data) || (data & ((long) (blockSectorsMask + 1) * BlkLayout.SECTOR - 1)) != 0) {
            refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
            return;
        }
        int slot = free[freeCount - 1];
        IoVecs v = iov[slot];
        int pieces = type == BlkLayout.T_IN ? fillWritable(c, v, data) : fillReadable(c, v, data);
        if (pieces < 0) {
            refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
            return;
        }
        long usedLength = type == BlkLayout.T_IN ? data + 1 : 1;
        if (type == BlkLayout.T_IN) {
            reads++;
        } else {
            writes++;
        }
        if (data == 0) { // nothing to move: done
            answer(c.head(), sRegion, sOffset, BlkLayout.S_OK, usedLength);
            return;
        }
        start(c, sRegion, sOffset, type, type == BlkLayout.T_IN ? BlockIo.READ : BlockIo.WRITE,
                sector << BlkLayout.SECTOR_SHIFT, data, usedLength, pieces, type == BlkLayout.T_OUT && writeThrough());
    }

    /** DISCARD or WRITE_ZEROES (feature bit {@code feature}): one segment after the header. */
    private void ranges(DescriptorChain c, MemorySegment sRegion, long sOffset, int type, int feature, long readable,
                        long writable) {
        if (!VirtioFeatures.has(features, feature)) {
            refuse(c, sRegion, sOffset, BlkLayout.S_UNSUPP);
            return;
        }
        long segBytes = readable - BlkLayout.HEADER_BYTES;
        if (readOnly || writable != 1 || segBytes != BlkLayout.SEGMENT_BYTES) { // max_*_seg is 1: exactly one
            refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
            return;
        }
        c.gather(BlkLayout.HEADER_BYTES, segment, 0, BlkLayout.SEGMENT_BYTES);
        long sector = segment.get(LE_LONG, BlkLayout.SEGMENT_SECTOR);
        long sectors = Integer.toUnsignedLong(segment.get(LE_INT, BlkLayout.SEGMENT_NUM_SECTORS));
        int flags = segment.get(LE_INT, BlkLayout.SEGMENT_FLAGS);
        if ((flags & ~BlkLayout.SEGMENT_FLAG_UNMAP) != 0
                || (type == BlkLayout.T_DISCARD && flags != 0)) {
            refuse(c, sRegion, sOffset, BlkLayout.S_UNSUPP);
            return;
        }
        if (sectors == 0 || sectors > maxSegmentSectors || (sectors & blockSectorsMask) != 0
                || !inRange(sector, sectors << BlkLayout.SECTOR_SHIFT)) {
            refuse(c, sRegion, sOffset, BlkLayout.S_IOERR);
            return;
        }
        int op;
        if (type == BlkLayout.T_DISCARD) {
            discards++;
            op = BlockIo.DISCARD;
        } else {
            writeZeroes++;
            op = flags != 0 ? BlockIo.WRITE_ZEROES_UNMAP : BlockIo.WRITE_ZEROES;
        }
        start(c, sRegion, sOffset, type, op, sector << BlkLayout.SECTOR_SHIFT, sectors << BlkLayout.SECTOR_SHIFT, 1, 0,
                writeThrough());
    }

    /** Whether {@code sector} is block-aligned and {@code length} bytes from it end within the capacity. */
    private boolean inRange(long sector, long length) {
        // Unsigned: a sector with the top bit set is past any capacity. The subtraction cannot underflow once
        // sector <= capacity, and length >>> 9 cannot overflow.
        return (sector & blockSectorsMask) == 0
                && Long.compareUnsigned(sector, capacitySectors) <= 0
                && (length >>> BlkLayout.SECTOR_SHIFT) <= capacitySectors - sector;
    }

    /**
     * Whether a write must be durable before it completes (features.md §4.4): neither FLUSH nor CONFIG_WCE
     * negotiated, or CONFIG_WCE with the cache switched to writethrough.
     */
    private boolean writeThrough() {
        boolean wce = VirtioFeatures.has(features, BlkLayout.F_CONFIG_WCE);
        if (wce) {
            return !cache.writeback();
        }
        return !VirtioFeatures.has(features, BlkLayout.F_FLUSH);
    }

    /** Marks the iovecs slot {@code slot}'s read filled, each in one region (fillWritable took them from elements). */
    private void loggedRead(DeviceQueue q, int slot) {
        IoVecs v = iov[slot];
        for (int i = 0; i < pieces[slot]; i++) {
            if (!logged(q, v.base(i), v.length(i))) {
                return;
            }
        }
    }

    /** Breaks {@code q} on a write its log has no bit for: false, nothing more goes back on it. */
    private boolean logOverflow(DeviceQueue q, DirtyLogOverflowException e) {
        LOG.warning("blk queue " + index + " broken: " + e.getMessage());
        q.fail(e);
        return false;
    }

    /** Marks the first {@code len} bytes of {@code c}'s writable part (as {@link #logged}). */
    private boolean loggedWritable(DeviceQueue q, DescriptorChain c, long len) {
        try {
            c.markWritten(log, memory, len);
            return true;
        } catch (DirtyLogOverflowException e) {
            return logOverflow(q, e);
        }
    }

    private void start(DescriptorChain c, MemorySegment sRegion, long sOffset, int type, int op, long offset,
                       long length, long usedLength, int pieces, boolean sync) {
        int slot = free[--freeCount];
        this.pieces[slot] = pieces;
        head[slot] = c.head();
        statusRegion[slot] = sRegion;
        statusOffset[slot] = sOffset;
        used[slot] = usedLength;
        kind[slot] = type;
        bytes[slot] = length;
        passBytes += length;
        syncAfter[slot] = sync;
        if (!io.queue(slot, op, offset, length, iov[slot], 0, pieces)) {
            throw new IllegalStateException("engine full with a slot free"); // one slot, one operation
        }
        submitted++;
    }

    private void refuse(DescriptorChain c, MemorySegment sRegion, long sOffset, int status) {
        if (status == BlkLayout.S_UNSUPP) {
            unsupported++;
        } else {
            invalid++;
        }
        answer(c.head(), sRegion, sOffset, status, 1);
    }

    /** The writable part but its last byte (the status), {@code data} bytes, into {@code v}; -1 if too many pieces. */
    private static int fillWritable(DescriptorChain c, IoVecs v, long data) {
        int n = 0;
        long left = data;
        for (int i = c.readableCount(); i < c.count() && left > 0; i++) {
            long len = Math.min(c.length(i), left);
            if (n == v.capacity()) {
                return -1;
            }
            v.set(n++, c.region(i), c.offset(i), len);
            left -= len;
        }
        return n;
    }

    /** The readable part after the header, {@code data} bytes, into {@code v}; -1 if too many pieces. */
    private static int fillReadable(DescriptorChain c, IoVecs v, long data) {
        int n = 0;
        long skip = BlkLayout.HEADER_BYTES;
        for (int i = 0; i < c.readableCount(); i++) {
            long len = c.length(i);
            if (skip >= len) {
                skip -= len;
                continue;
            }
            if (n == v.capacity()) {
                return -1;
            }
            v.set(n++, c.region(i), c.offset(i) + skip, len - skip);
            skip = 0;
        }
        return data == 0 ? 0 : n;
    }

    /** Adds this pass's counts to the shared stats (once per pass, not per request). */
    private void fold() {
        if ((requests | notifications | suppressed | writeThroughSyncs | ioErrors | bytesRead | bytesWritten | submitted
                | completions) == 0) {
            return;
        }
        fold(BlkStats.REQUESTS, requests);
        fold(BlkStats.READS, reads);
        fold(BlkStats.WRITES, writes);
        fold(BlkStats.FLUSHES, flushes);
        fold(BlkStats.DISCARDS, discards);
        fold(BlkStats.WRITE_ZEROES, writeZeroes);
        fold(BlkStats.GET_IDS, getIds);
        fold(BlkStats.BYTES_READ, bytesRead);
        fold(BlkStats.BYTES_WRITTEN, bytesWritten);
        fold(BlkStats.WRITE_THROUGH_SYNCS, writeThroughSyncs);
        fold(BlkStats.IO_ERRORS, ioErrors);
        fold(BlkStats.INVALID, invalid);
        fold(BlkStats.UNSUPPORTED, unsupported);
        fold(BlkStats.MALFORMED, malformed);
        fold(BlkStats.NOTIFICATIONS, notifications);
        fold(BlkStats.SUPPRESSED, suppressed);
        fold(BlkStats.SUBMITTED, submitted);
        fold(BlkStats.COMPLETED, completions);
        requests = reads = writes = flushes = discards = writeZeroes = getIds = 0;
        bytesRead = bytesWritten = writeThroughSyncs = ioErrors = invalid = unsupported = malformed = 0;
        notifications = suppressed = submitted = completions = 0;
    }

    private void fold(int counter, long count) {
        if (count != 0) {
            stats.add(counter, count);
        }
    }
}
