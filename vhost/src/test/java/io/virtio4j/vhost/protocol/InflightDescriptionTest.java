package io.virtio4j.vhost.protocol;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** GET/SET_INFLIGHT_FD's payload as QEMU and libvhost-user lay it out: 8 + 8 + 2 + 2 bytes, padded to 24. */
class InflightDescriptionTest {
    /** The bytes QEMU sends: struct VhostUserInflight, native order, 4 bytes of padding at the end. */
    private static byte[] qemu(long size, long offset, int queues, int queueSize, int padding) {
        return ByteBuffer.allocate(24).order(ByteOrder.nativeOrder()).putLong(size).putLong(offset)
                .putShort((short) queues).putShort((short) queueSize).putInt(padding).array();
    }

    @Test
    void decodesWhatQemuSendsIgnoringThePadding() throws VhostUserProtocolException {
        InflightDescription d = InflightDescription.decode("SET_INFLIGHT_FD",
                MemorySegment.ofArray(qemu(65_792, 4096, 4, 1024, 0xdeadbeef)));
        assertEquals(new InflightDescription(65_792, 4096, 4, 1024), d);
    }

    @Test
    void u16FieldsAreUnsignedAndU64FieldsKeepAllBits() throws VhostUserProtocolException {
        InflightDescription d = InflightDescription.decode("SET_INFLIGHT_FD",
                MemorySegment.ofArray(qemu(-1L, Long.MIN_VALUE, 0xFFFF, 0x8000, 0)));
        assertEquals(-1L, d.mmapSize());
        assertEquals(Long.MIN_VALUE, d.mmapOffset());
        assertEquals(0xFFFF, d.numQueues());
        assertEquals(0x8000, d.queueSize());
    }

    @Test
    void encodesAsQemuDoesWithZeroPadding() {
        assertArrayEquals(qemu(16_448, 0, 1, 1024, 0), new InflightDescription(16_448, 0, 1, 1024).encode());
        assertArrayEquals(qemu(0, 0, 2, 256, 0), InflightDescription.request(2, 256).encode());
    }

    @Test
    void roundTrips() throws VhostUserProtocolException {
        InflightDescription d = new InflightDescription(0x1234_5678_9abcL, 0x40, 0xFFFF, 0xFFFF);
        assertEquals(d, InflightDescription.decode("GET_INFLIGHT_FD", MemorySegment.ofArray(d.encode())));
    }

    /** 20 bytes (the fields without padding) and 32 are not what QEMU sends: refused naming the size. */
    @ParameterizedTest
    @ValueSource(ints = {0, 20, 23, 25, 32})
    void anyOtherSizeIsRefusedNamingIt(int size) {
        VhostUserProtocolException e = assertThrows(VhostUserProtocolException.class,
                () -> InflightDescription.decode("SET_INFLIGHT_FD", MemorySegment.ofArray(new byte[size])));
        assertEquals("size", e.field());
        assertEquals(size, e.value());
        assertEquals("SET_INFLIGHT_FD", e.request());
    }

    @Test
    void bothRequestsTakeExactlyThePayloadSizeAndTheSetOneFd() {
        for (Request r : new Request[] {Request.GET_INFLIGHT_FD, Request.SET_INFLIGHT_FD}) {
            assertEquals(InflightDescription.SIZE, r.minSize());
            assertEquals(InflightDescription.SIZE, r.maxSize());
        }
        assertEquals(31, Request.GET_INFLIGHT_FD.code());
        assertEquals(32, Request.SET_INFLIGHT_FD.code());
        assertEquals(0, Request.GET_INFLIGHT_FD.fds());
        assertEquals(1, Request.SET_INFLIGHT_FD.fds());
        assertEquals(true, Request.GET_INFLIGHT_FD.hasReply());
    }

    @Test
    void fieldsWiderThanU16AreAProgrammingError() {
        assertThrows(IllegalArgumentException.class, () -> new InflightDescription(0, 0, 0x10000, 1));
        assertThrows(IllegalArgumentException.class, () -> new InflightDescription(0, 0, 1, -1));
    }
}
