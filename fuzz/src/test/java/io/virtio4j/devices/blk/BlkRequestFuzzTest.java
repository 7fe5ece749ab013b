package io.virtio4j.devices.blk;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.virtio4j.core.device.DeviceOptions;
import io.virtio4j.core.device.DeviceQueue;
import io.virtio4j.core.driver.DriverOptions;
import io.virtio4j.core.driver.DriverQueue;
import io.virtio4j.core.driver.ScatterGather;
import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.layout.RingSegment;
import io.virtio4j.core.notify.ParkingNotifier;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.devices.blk.io.BlockIo;
import io.virtio4j.fuzz.FuzzInput;
import io.virtio4j.os.EventFd;
import io.virtio4j.os.IoVecs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Fuzz target {@code blk-request} (d): the virtio-blk request parser ({@link BlkRequests}) over requests of any
 * shape: header type, sector, reserved field, header split anywhere or cut short, payload and writable part of any
 * length in up to seven descriptors, DISCARD/WRITE_ZEROES segments of any content; device read-only or not, block
 * size 512 or 4096, FLUSH/CONFIG_WCE/DISCARD/WRITE_ZEROES negotiated or not, engine depth 1 to 4, and a bad sector
 * (and optionally a failing flush) in the engine.
 *
 * <p>The engine is a recording one (the parser's only window on the disk): it checks every operation's range
 * against the capacity and every iovec against the guest memory of the request it belongs to, reads and writes
 * only there, and fails exactly the operations that touch the bad sector.
 *
 * <p>Invariants, from the request format of the virtio spec (virtio-blk 5.2.6) as {@link BlkRequests} documents
 * it: every request comes back exactly once; its status is the last writable byte, when it has one, and is what
 * the spec says (UNSUPP for unknown types, DISCARD/WRITE_ZEROES not negotiated and unknown segment flags; IOERR
 * for a malformed request, a range outside the capacity and a failed operation; OK otherwise), with the used length
 * the spec says; a request without a writable byte comes back with length 0 and writes nothing; the engine sees
 * exactly the operations the valid requests ask for (plus a flush after each write when writes must be durable),
 * over exactly their data; an IN's data is the disk's, a GET_ID's the serial; and no byte of guest memory changes
 * outside the status, an IN's data and a GET_ID's answer.
 */
class BlkRequestFuzzTest {
    private static final int QSZ = 8;
    private static final long CAPACITY = 128 * 512;
    private static final long DATA_BYTES = 1 << 18;
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int[] LENGTHS = {1, 2, 8, 15, 16, 17, 20, 21, 32, 511, 512, 513, 1024, 1025, 4096, 4097};
    private static final int[] TYPES = {BlkLayout.T_IN, BlkLayout.T_OUT, BlkLayout.T_FLUSH, 5, BlkLayout.T_GET_ID,
        BlkLayout.T_DISCARD, BlkLayout.T_WRITE_ZEROES, 2, 3, 0x8000_0000, 0x8000_0001, -1};
    private static final byte[] SERIAL = "fuzz-serial-0123".getBytes();
    private static final int NONE = -1;
    /** Prints each request and its answer when VIRTIO4J_FUZZ_TRACE is set (to read a finding). */
    private static final boolean TRACE = System.getenv("VIRTIO4J_FUZZ_TRACE") != null;

    @FuzzTest(maxDuration = "10s")
    void request(byte[] data) {
        FuzzInput in = new FuzzInput(data);
        try (Rig rig = new Rig(in)) {
            for (int batch = 0; batch < 32 && in.hasMore(); batch++) {
                rig.batch();
            }
        }
    }

    /** What the driver made and what the spec says must come back. */
    private static final class Request {
        final int token;
        final long[] addr;
        final int[] len;
        final int readable;
        long readableBytes;
        long writableBytes;
        int type;
        long sector;
        // the oracle's answer
        int status = NONE;
        long used;
        int op = NONE;
        long opOffset;
        long opLength;
        boolean sync;

        Request(int token, List<long[]> elements, int readable) {
            this.token = token;
            addr = new long[elements.size()];
            len = new int[elements.size()];
            for (int i = 0; i < addr.length; i++) {
                addr[i] = elements.get(i)[0];
                len[i] = (int) elements.get(i)[1];
                if (i < readable) {
                    readableBytes += len[i];
                } else {
                    writableBytes += len[i];
                }
            }
            this.readable = readable;
        }

        long statusAddress() {
            return addr[addr.length - 1] + len[len.length - 1] - 1;
        }

        boolean contains(long a, long n, boolean writablePart) {
            for (int i = writablePart ? readable : 0; i < (writablePart ? addr.length : readable); i++) {
                if (a >= addr[i] && a + n <= addr[i] + len[i]) {
                    return true;
                }
            }
            return false;
        }
    }

    /** One recorded engine operation. */
    private record Op(int op, long offset, long length, long[] bases, long[] lengths) {
    }

    private static final class Rig implements AutoCloseable {
        private final FuzzInput in;
        private final Arena arena = Arena.ofConfined();
        private final MemorySegment mem;
        private final long dataBase;
        private final DriverQueue driver;
        private final BlkRequests requests;
        private final Engine engine;
        private final boolean readOnly;
        private final int blockSize;
        private final long features;
        private final long badSector;
        private final boolean flushFails;
        private int tokens;

        Rig(FuzzInput in) {
            this.in = in;
            int cfg = in.u8();
            readOnly = (cfg & 1) != 0;
            blockSize = (cfg & 2) != 0 ? 4096 : 512;
            long f = 0;
            f |= (cfg & 4) != 0 ? BlkLayout.bit(BlkLayout.F_FLUSH) : 0;
            f |= (cfg & 8) != 0 ? BlkLayout.bit(BlkLayout.F_CONFIG_WCE) : 0;
            f |= (cfg & 16) != 0 ? BlkLayout.bit(BlkLayout.F_DISCARD) : 0;
            f |= (cfg & 32) != 0 ? BlkLayout.bit(BlkLayout.F_WRITE_ZEROES) : 0;
            features = f;
            int depth = 1 + ((cfg >>> 6) & 3);
            int faults = in.u8();
            badSector = faults < 128 ? faults : -1; // -1: no bad sector
            flushFails = (in.u8() & 0xF) == 0;
            RingSegment ring = RingSegment.allocate(arena, RingFormat.SPLIT, QSZ, 4096, DATA_BYTES);
            mem = ring.segment();
            dataBase = ring.dataOffset();
            driver = DriverQueue.over(ring.areas(), DriverOptions.defaults(), new ParkingNotifier());
            DeviceQueue device = DeviceQueue.over(ring.areas(), ring.guestMemory(),
                    new DeviceOptions(Ordering.WEAK, true, false, false, false), new ParkingNotifier());
            engine = new Engine(depth);
            requests = new BlkRequests(0, arena, engine, new WriteCache(), readOnly, CAPACITY, blockSize, SERIAL,
                    new BlkStats());
            requests.attach(device, features, null, ring.guestMemory());
        }

        /** A few requests made available at once, served, and checked. */
        void batch() {
            long next = dataBase;
            List<Request> batch = new ArrayList<>();
            ScatterGather sg = new ScatterGather(QSZ);
            int count = 1 + in.below(3);
            for (int r = 0; r < count; r++) {
                long[] at = {next};
                Request q = build(at, sg);
                if (q == null || !driver.hasRoomFor(sg)) {
                    break;
                }
                next = at[0];
                driver.add(sg, q.token);
                batch.add(q);
            }
            if (batch.isEmpty()) {
                return;
            }
            driver.kick();
            for (Request q : batch) {
                expect(q);
            }
            MemorySegment before = MemorySegment.ofArray(mem.asSlice(dataBase, next - dataBase).toArray(ValueLayout.JAVA_BYTE));
            engine.begin(batch);
            Map<Integer, Long> back = new HashMap<>();
            for (int pass = 0; pass < 16 && back.size() < batch.size(); pass++) {
                requests.pass(16);
                Object t;
                while ((t = driver.pollUsed()) != null) {
                    assertNull(back.put((Integer) t, driver.lastUsedLength()), "request " + t + " came back twice");
                }
            }
            assertEquals(batch.size(), back.size(), "requests back");
            for (Request q : batch) {
                check(q, back.get(q.token), before);
            }
            engine.end(batch);
        }

        /** Builds one request from the input into guest memory from {@code at[0]} on; fills {@code sg}. */
        private Request build(long[] at, ScatterGather sg) {
            int sel = in.u8();
            int type = sel < 224 ? TYPES[sel % TYPES.length] : in.u32();
            long sector = pickSector();
            int reserved = in.u8() < 240 ? 0 : in.u32();
            byte[] stream;
            int shape = in.u8();
            if (type == BlkLayout.T_DISCARD || type == BlkLayout.T_WRITE_ZEROES || (shape & 0x80) != 0) {
                stream = new byte[16 + 16];
                MemorySegment s = MemorySegment.ofArray(stream);
                s.set(LE_LONG, 16 + BlkLayout.SEGMENT_SECTOR, pickSector());
                int pick = in.u8();
                s.set(LE_INT, 16 + BlkLayout.SEGMENT_NUM_SECTORS, pick < 200 ? pick % 40 : in.u32());
                int flags = in.u8();
                s.set(LE_INT, 16 + BlkLayout.SEGMENT_FLAGS, flags < 240 ? flags % 3 : in.u32());
            } else {
                int payload = (shape & 3) == 0 ? LENGTHS[in.below(LENGTHS.length)] : (shape & 3) == 1 ? 512 * in.below(9) : 0;
                stream = new byte[16 + payload];
                for (int i = 16; i < stream.length; i++) {
                    stream[i] = (byte) (i * 31 + tokens);
                }
            }
            MemorySegment h = MemorySegment.ofArray(stream);
            h.set(LE_INT, BlkLayout.HEADER_TYPE, type);
            h.set(LE_INT, BlkLayout.HEADER_RESERVED, reserved);
            h.set(LE_LONG, BlkLayout.HEADER_SECTOR, sector);
            int readableTotal = (shape & 0x60) == 0x60 ? in.below(stream.length + 1) : stream.length; // cut short
            int pieces = readableTotal == 0 ? 0 : 1 + in.below(Math.min(3, readableTotal));
            List<long[]> elements = new ArrayList<>();
            int done = 0;
            for (int p = 0; p < pieces; p++) {
                int left = readableTotal - done;
                int n = p == pieces - 1 ? left : 1 + in.below(Math.max(1, left - (pieces - 1 - p)));
                n = Math.min(n, left - (pieces - 1 - p));
                elements.add(place(at, stream, done, n));
                done += n;
            }
            int writablePieces = in.below(4);
            int wshape = in.u8();
            for (int p = 0; p < writablePieces; p++) {
                int n = switch (wshape % 4) {
                    case 0 -> p == writablePieces - 1 ? 1 : 512 * (1 + in.below(8)); // data pieces, then the status
                    case 1 -> p == writablePieces - 1 ? 512 * in.below(9) + 1 : 512; // status at the end of data
                    case 2 -> LENGTHS[in.below(LENGTHS.length)];
                    default -> 1 + in.below(64);
                };
                elements.add(place(at, null, 0, n));
            }
            if (elements.isEmpty() || elements.size() > QSZ || elements.contains(null)) {
                return null;
            }
            sg.clear();
            for (int i = 0; i < elements.size(); i++) {
                if (i < pieces) {
                    sg.readable(elements.get(i)[0], (int) elements.get(i)[1]);
                } else {
                    sg.writable(elements.get(i)[0], (int) elements.get(i)[1]);
                }
            }
            Request q = new Request(tokens++, elements, pieces);
            q.type = type;
            q.sector = sector;
            return q;
        }

        private long pickSector() {
            int pick = in.u8();
            if (pick < 160) {
                return pick % 136; // around the capacity (128 sectors)
            }
            if (pick < 224) {
                return 8L * (pick % 20);
            }
            return in.u64();
        }

        /** {@code n} bytes of guest memory at {@code at[0]} (moved on, with a gap), from {@code src} or 0xEE. */
        private long[] place(long[] at, byte[] src, int from, int n) {
            long a = at[0];
            if (a + n + 64 > dataBase + DATA_BYTES) {
                return null; // out of room: no such request
            }
            if (src != null) {
                MemorySegment.copy(src, from, mem, ValueLayout.JAVA_BYTE, a, n);
            } else {
                mem.asSlice(a, n).fill((byte) 0xEE);
            }
            at[0] = a + n + 8 + (n & 7); // a gap between elements: bytes no request owns
            return new long[]{a, n};
        }

        /** The virtio spec's answer to {@code q} (virtio-blk 5.2.6), as BlkRequests documents it. */
        private void expect(Request q) {
            long r = q.readableBytes;
            long w = q.writableBytes;
            if (w == 0) {
                q.used = 0; // cannot be answered: no status byte
                return;
            }
            q.used = 1;
            if (r < BlkLayout.HEADER_BYTES) {
                q.status = BlkLayout.S_IOERR;
                return;
            }
            boolean wce = has(BlkLayout.F_CONFIG_WCE);
            boolean writeThrough = wce ? false : !has(BlkLayout.F_FLUSH); // the cache starts in writeback
            switch (q.type) {
                case BlkLayout.T_IN -> {
                    long data = w - 1;
                    if (r != 16 || !inRange(q.sector, data) || data % blockSize != 0) {
                        q.status = BlkLayout.S_IOERR;
                    } else if (data == 0) {
                        q.status = BlkLayout.S_OK;
                    } else {
                        engineOp(q, BlockIo.READ, q.sector << 9, data, false);
                        q.used = data + 1;
                    }
                }
                case BlkLayout.T_OUT -> {
                    long data = r - 16;
                    if (w != 1 || readOnly || !inRange(q.sector, data) || data % blockSize != 0) {
                        q.status = BlkLayout.S_IOERR;
                    } else if (data == 0) {
                        q.status = BlkLayout.S_OK;
                    } else {
                        engineOp(q, BlockIo.WRITE, q.sector << 9, data, writeThrough);
                    }
                }
                case BlkLayout.T_FLUSH, 5 -> {
                    if (q.sector != 0 || r != 16 || w != 1) {
                        q.status = BlkLayout.S_IOERR;
                    } else {
                        engineOp(q, BlockIo.FLUSH, 0, 0, false);
                    }
                }
                case BlkLayout.T_GET_ID -> {
                    if (r != 16 || w - 1 < BlkLayout.ID_BYTES) {
                        q.status = BlkLayout.S_IOERR;
                    } else {
                        q.status = BlkLayout.S_OK;
                        q.used = BlkLayout.ID_BYTES + 1;
                    }
                }
                case BlkLayout.T_DISCARD, BlkLayout.T_WRITE_ZEROES -> ranges(q, writeThrough);
                default -> q.status = BlkLayout.S_UNSUPP;
            }
        }

        private void ranges(Request q, boolean writeThrough) {
            boolean discard = q.type == BlkLayout.T_DISCARD;
            if (!has(discard ? BlkLayout.F_DISCARD : BlkLayout.F_WRITE_ZEROES)) {
                q.status = BlkLayout.S_UNSUPP;
                return;
            }
            if (readOnly || q.writableBytes != 1 || q.readableBytes != 32) {
                q.status = BlkLayout.S_IOERR;
                return;
            }
            MemorySegment seg = MemorySegment.ofArray(gatherReadable(q, 16, 16));
            long sector = seg.get(LE_LONG, BlkLayout.SEGMENT_SECTOR);
            long sectors = Integer.toUnsignedLong(seg.get(LE_INT, BlkLayout.SEGMENT_NUM_SECTORS));
            int flags = seg.get(LE_INT, BlkLayout.SEGMENT_FLAGS);
            if ((flags & ~BlkLayout.SEGMENT_FLAG_UNMAP) != 0 || (discard && flags != 0)) {
                q.status = BlkLayout.S_UNSUPP;
                return;
            }
            if (sectors == 0 || sectors > BlkDevice.MAX_DISCARD_SECTORS || sectors % (blockSize / 512) != 0
                    || !inRange(sector, sectors << 9)) {
                q.status = BlkLayout.S_IOERR;
                return;
            }
            int op = discard ? BlockIo.DISCARD : flags != 0 ? BlockIo.WRITE_ZEROES_UNMAP : BlockIo.WRITE_ZEROES;
            engineOp(q, op, sector << 9, sectors << 9, writeThrough);
        }

        private void engineOp(Request q, int op, long offset, long length, boolean sync) {
            q.op = op;
            q.opOffset = offset;
            q.opLength = length;
            q.sync = sync;
            boolean failed = op == BlockIo.FLUSH ? flushFails : touchesBad(offset, length);
            failed |= sync && flushFails;
            q.status = failed ? BlkLayout.S_IOERR : BlkLayout.S_OK;
        }

        private boolean touchesBad(long offset, long length) {
            return badSector >= 0 && offset <= badSector * 512 && badSector * 512 < offset + length;
        }

        private boolean inRange(long sector, long length) {
            long capSectors = CAPACITY / 512;
            return sector % (blockSize / 512) == 0 && Long.compareUnsigned(sector, capSectors) <= 0
                    && (length >>> 9) <= capSectors - sector;
        }

        private boolean has(int bit) {
            return (features & BlkLayout.bit(bit)) != 0;
        }

        private byte[] gatherReadable(Request q, long skip, int n) {
            byte[] out = new byte[n];
            int o = 0;
            for (int i = 0; i < q.readable && o < n; i++) {
                for (int b = 0; b < q.len[i] && o < n; b++) {
                    if (skip > 0) {
                        skip--;
                        continue;
                    }
                    out[o++] = mem.get(ValueLayout.JAVA_BYTE, q.addr[i] + b);
                }
            }
            return out;
        }

        private void check(Request q, long used, MemorySegment before) {
            String what = "request " + q.token + " type " + q.type + " sector " + q.sector + " readable "
                    + q.readableBytes + " writable " + q.writableBytes;
            if (TRACE) {
                System.out.println("  " + what + ": status " + q.status + " used " + used + " op " + q.op);
            }
            assertEquals(q.used, used, "used length of " + what);
            if (q.status != NONE) {
                assertEquals(q.status, Byte.toUnsignedInt(mem.get(ValueLayout.JAVA_BYTE, q.statusAddress())),
                        "status of " + what);
            }
            if (q.op == BlockIo.READ && q.status == BlkLayout.S_OK) {
                long pos = 0;
                for (int i = q.readable; i < q.addr.length && pos < q.opLength; i++) {
                    for (int b = 0; b < q.len[i] && pos < q.opLength; b++, pos++) {
                        assertEquals(Engine.disk(q.opOffset + pos), mem.get(ValueLayout.JAVA_BYTE, q.addr[i] + b),
                                "byte " + pos + " read by " + what);
                    }
                }
            }
            if (q.type == BlkLayout.T_GET_ID && q.status == BlkLayout.S_OK) {
                long pos = 0;
                for (int i = q.readable; i < q.addr.length && pos < BlkLayout.ID_BYTES; i++) {
                    for (int b = 0; b < q.len[i] && pos < BlkLayout.ID_BYTES; b++, pos++) {
                        byte want = pos < SERIAL.length ? SERIAL[(int) pos] : 0;
                        assertEquals(want, mem.get(ValueLayout.JAVA_BYTE, q.addr[i] + b), "serial byte " + pos);
                    }
                }
            }
            // the readable part is the driver's: untouched
            for (int i = 0; i < q.readable; i++) {
                for (int b = 0; b < q.len[i]; b++) {
                    long a = q.addr[i] + b;
                    assertEquals(before.get(ValueLayout.JAVA_BYTE, a - dataBase), mem.get(ValueLayout.JAVA_BYTE, a),
                            "readable byte of " + what + " changed");
                }
            }
            // the writable part changes only where the answer goes
            long pos = 0;
            for (int i = q.readable; i < q.addr.length; i++) {
                for (int b = 0; b < q.len[i]; b++, pos++) {
                    long a = q.addr[i] + b;
                    boolean mayChange = (q.status != NONE && a == q.statusAddress())
                            || (q.op == BlockIo.READ && pos < q.opLength)
                            || (q.type == BlkLayout.T_GET_ID && q.status == BlkLayout.S_OK && pos < BlkLayout.ID_BYTES);
                    if (!mayChange) {
                        assertEquals(before.get(ValueLayout.JAVA_BYTE, a - dataBase), mem.get(ValueLayout.JAVA_BYTE, a),
                                "writable byte " + pos + " of " + what + " changed");
                    }
                }
            }
        }

        @Override
        public void close() {
            requests.drain();
            engine.close();
            arena.close();
        }

        /**
         * The recording engine: performs each operation in {@code submit} after checking it, fails those that
         * touch the bad sector (and flushes, when they fail), and accounts for them against what the batch's
         * requests ask.
         */
        private final class Engine implements BlockIo {
            private final int depth;
            private final int[] tag;
            private final int[] opQ;
            private final long[] offQ;
            private final long[] lenQ;
            private final IoVecs[] iovQ;
            private final int[] idxQ;
            private final int[] cntQ;
            private int queued;
            private final int[] doneTag;
            private final long[] doneResult;
            private int done;
            private List<Request> batch = List.of();
            private final List<Op> ops = new ArrayList<>();

            Engine(int depth) {
                this.depth = depth;
                tag = new int[depth];
                opQ = new int[depth];
                offQ = new long[depth];
                lenQ = new long[depth];
                iovQ = new IoVecs[depth];
                idxQ = new int[depth];
                cntQ = new int[depth];
                doneTag = new int[depth];
                doneResult = new long[depth];
            }

            static byte disk(long offset) {
                return (byte) (offset * 7 + (offset >>> 9));
            }

            void begin(List<Request> b) {
                batch = b;
                ops.clear();
            }

            /** Every operation the batch asked for reached the engine, and nothing else did. */
            void end(List<Request> b) {
                List<String> want = new ArrayList<>();
                for (Request q : b) {
                    if (q.op != NONE) {
                        want.add(q.op + "@" + q.opOffset + "+" + q.opLength);
                        if (q.sync && !(q.op != BlockIo.FLUSH && touchesBad(q.opOffset, q.opLength))) {
                            want.add(BlockIo.FLUSH + "@0+0");
                        }
                    }
                }
                List<String> got = new ArrayList<>();
                for (Op o : ops) {
                    got.add(o.op() + "@" + o.offset() + "+" + o.length());
                }
                want.sort(null);
                got.sort(null);
                assertEquals(want, got, "engine operations");
            }

            @Override
            public int depth() {
                return depth;
            }

            @Override
            public int inFlight() {
                return queued + done;
            }

            @Override
            public boolean queue(int t, int op, long offset, long length, IoVecs iov, int iovIndex, int iovCount) {
                assertTrue(op >= READ && op <= WRITE_ZEROES_UNMAP, "operation " + op);
                if (queued + done == depth) {
                    return false;
                }
                tag[queued] = t;
                opQ[queued] = op;
                offQ[queued] = offset;
                lenQ[queued] = length;
                iovQ[queued] = iov;
                idxQ[queued] = iovIndex;
                cntQ[queued] = iovCount;
                queued++;
                return true;
            }

            @Override
            public void submit() {
                int n = queued;
                queued = 0;
                for (int i = 0; i < n; i++) {
                    doneTag[done] = tag[i];
                    doneResult[done] = perform(opQ[i], offQ[i], lenQ[i], iovQ[i], idxQ[i], cntQ[i]);
                    done++;
                    iovQ[i] = null;
                }
            }

            private long perform(int op, long offset, long length, IoVecs iov, int index, int count) {
                assertTrue(offset >= 0 && length >= 0 && offset + length <= CAPACITY,
                        "operation " + op + " at " + offset + " + " + length + " past the capacity " + CAPACITY);
                long[] bases = new long[Math.max(0, count)];
                long[] lens = new long[Math.max(0, count)];
                if (op == READ || op == WRITE) {
                    assertTrue(count >= 1, "a transfer without iovecs");
                    long total = 0;
                    Request owner = null;
                    for (int i = 0; i < count; i++) {
                        long base = iov.base(index + i) - mem.address();
                        long len = iov.length(index + i);
                        bases[i] = base;
                        lens[i] = len;
                        total += len;
                        Request r = ownerOf(base, len, op == READ);
                        assertNotNull(r, "iovec " + i + " of operation " + op + " at guest " + base + " + " + len
                                + " is outside the " + (op == READ ? "writable" : "readable") + " part of every request");
                        assertTrue(owner == null || owner == r, "one operation over two requests");
                        owner = r;
                    }
                    assertEquals(length, total, "iovec lengths of operation " + op);
                    if (op == READ && !touchesBad(offset, length)) {
                        long pos = 0;
                        for (int i = 0; i < count; i++) {
                            for (long b = 0; b < lens[i]; b++, pos++) {
                                mem.set(ValueLayout.JAVA_BYTE, bases[i] + b, disk(offset + pos));
                            }
                        }
                    }
                }
                ops.add(new Op(op, offset, length, bases, lens));
                boolean failed = op == FLUSH ? flushFails : touchesBad(offset, length);
                return failed ? -5 : (op == FLUSH ? 0 : length);
            }

            private Request ownerOf(long base, long len, boolean writablePart) {
                for (Request q : batch) {
                    if (q.contains(base, len, writablePart)) {
                        return q;
                    }
                }
                return null;
            }

            @Override
            public int reap(Completion sink) {
                int n = done;
                done = 0;
                for (int i = 0; i < n; i++) {
                    sink.completed(doneTag[i], doneResult[i]);
                }
                return n;
            }

            @Override
            public EventFd completionFd() {
                return null;
            }

            @Override
            public void close() {
                queued = 0;
                done = 0;
            }
        }
    }
}
