package io.virtio4j.vhost.protocol;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The payload records: what the front-end encodes the back-end decodes to the same values, at the offsets of
 * the C layout; and every malformed payload is refused naming the request, the field and the value.
 */
class PayloadRecordsTest {
    private static final String R = "TEST_REQUEST";

    private static MemorySegment seg(byte[] b) {
        return MemorySegment.ofArray(b);
    }

    private static ByteBuffer buf(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.nativeOrder());
    }

    private static void refused(String field, long value, Executable decode) {
        VhostUserProtocolException e = assertThrows(VhostUserProtocolException.class, decode);
        assertEquals(R, e.request(), "request named");
        assertEquals(field, e.field(), "field named: " + e.getMessage());
        assertEquals(value, e.value(), "value named: " + e.getMessage());
    }

    // ---- round trips and layout ----

    @Test
    void u64RoundTripsInNativeOrder() throws Exception {
        byte[] b = new U64(0x0123_4567_89AB_CDEFL).encode();
        assertArrayEquals(buf(8).putLong(0x0123_4567_89AB_CDEFL).array(), b);
        assertEquals(0x0123_4567_89AB_CDEFL, U64.decode(R, seg(b)).value());
    }

    @Test
    void vringStateKeepsUnsignedFields() throws Exception {
        byte[] b = buf(8).putInt(-1).putInt(0x8000_0000).array();
        VringState s = VringState.decode(R, seg(b));
        assertEquals(0xFFFF_FFFFL, s.index());
        assertEquals(0x8000_0000L, s.num());
        assertArrayEquals(b, s.encode());
    }

    @Test
    void vringAddressFieldsAreDescUsedAvailLogInThatOrder() throws Exception {
        byte[] b = buf(40).putInt(3).putInt(1).putLong(0x1000).putLong(0x2000).putLong(0x3000).putLong(0x4000).array();
        VringAddress a = VringAddress.decode(R, seg(b));
        assertEquals(new VringAddress(3, VringAddress.F_LOG, 0x1000, 0x2000, 0x3000, 0x4000), a);
        assertArrayEquals(b, a.encode());
    }

    @Test
    void vringFdCarriesIndexAndNofd() throws Exception {
        assertEquals(new VringFd(7, true), VringFd.decode(R, seg(new U64(0x107).encode())));
        assertEquals(new VringFd(255, false), VringFd.decode(R, seg(new U64(0xFF).encode())));
        assertArrayEquals(new U64(0x105).encode(), new VringFd(5, true).encode());
    }

    @Test
    void memoryTableRoundTrips() throws Exception {
        MemoryTableDescription t = new MemoryTableDescription(List.of(
                new MemoryRegionDescription(0, 0x10000, 0x7000_0000_0000L, 0),
                new MemoryRegionDescription(0x1_0000_0000L, 0x2000, 0x7100_0000_0000L, 0x4000)));
        byte[] b = t.encode();
        assertEquals(8 + 2 * 32, b.length);
        assertEquals(2, ByteBuffer.wrap(b).order(ByteOrder.nativeOrder()).getInt(0), "nregions");
        assertEquals(0x4000, ByteBuffer.wrap(b).order(ByteOrder.nativeOrder()).getLong(8 + 32 + 24), "regions[1].mmap_offset");
        assertEquals(t, MemoryTableDescription.decode(R, seg(b)));
    }

    @Test
    void singleRegionHasEightBytesOfPaddingFirst() throws Exception {
        SingleMemoryRegion s = new SingleMemoryRegion(new MemoryRegionDescription(0x1000, 0x2000, 0x3000, 0x40));
        byte[] b = s.encode();
        assertEquals(40, b.length);
        assertEquals(0x1000, ByteBuffer.wrap(b).order(ByteOrder.nativeOrder()).getLong(8));
        assertEquals(s, SingleMemoryRegion.decode(R, seg(b)));
    }

    @Test
    void configRoundTrips() throws Exception {
        ConfigPayload c = new ConfigPayload(6, ConfigPayload.FLAG_MIGRATION, new byte[] {1, 2, 3});
        byte[] b = c.encode();
        assertArrayEquals(buf(15).putInt(6).putInt(3).putInt(1).put(new byte[] {1, 2, 3}).array(), b);
        ConfigPayload d = ConfigPayload.decode(R, seg(b));
        assertEquals(6, d.offset());
        assertEquals(ConfigPayload.FLAG_MIGRATION, d.flags());
        assertArrayEquals(new byte[] {1, 2, 3}, d.data());
    }

    @Test
    void headerRoundTrips() {
        MemorySegment m = seg(new byte[Header.SIZE]);
        new Header(24, 0x9, 0xFFFF_FFFFL).writeTo(m);
        assertEquals(new Header(24, 0x9, 0xFFFF_FFFFL), Header.read(m));
    }

    // ---- refusals ----

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 4, 7, 9, 16})
    void fixedSizePayloadsOfAnotherSizeAreRefused(int size) {
        MemorySegment p = seg(new byte[size]);
        refused("size", size, () -> U64.decode(R, p));
        refused("size", size, () -> VringState.decode(R, p));
        refused("size", size, () -> VringAddress.decode(R, p));
        refused("size", size, () -> VringFd.decode(R, p));
        refused("size", size, () -> SingleMemoryRegion.decode(R, p));
    }

    @ParameterizedTest(name = "u64 0x{0}")
    @ValueSource(longs = {0x200, 0x1_0000_0000L, 0x8000_0000_0000_0000L, 0x2FF})
    void vringFdBitsBeyondIndexAndNofdAreRefused(long p) {
        refused("u64", p, () -> VringFd.decode(R, seg(new U64(p).encode())));
    }

    @Test
    void vringAddressFlagsOtherThanLogAreRefused() {
        byte[] b = buf(40).putInt(0).putInt(0x3).array();
        refused("flags", 3, () -> VringAddress.decode(R, seg(b)));
    }

    @ParameterizedTest(name = "nregions {0}")
    @ValueSource(ints = {0, 9, -1})
    void memoryTableRegionCountOutsideOneToEightIsRefused(int n) {
        byte[] b = buf(8 + 32).putInt(n).array();
        refused("nregions", Integer.toUnsignedLong(n), () -> MemoryTableDescription.decode(R, seg(b)));
    }

    @Test
    void memoryTableLongerOrShorterThanItsRegionsIsRefused() {
        refused("size", 8 + 64, () -> MemoryTableDescription.decode(R, seg(buf(8 + 64).putInt(1).array())));
        refused("size", 8 + 32, () -> MemoryTableDescription.decode(R, seg(buf(8 + 32).putInt(2).array())));
        refused("size", 4, () -> MemoryTableDescription.decode(R, seg(new byte[4])));
    }

    /** A table of two regions whose second is {@code region}: the error names regions[1]. */
    private static MemorySegment tableWithSecond(long gpa, long size, long uaddr, long offset) {
        return seg(buf(8 + 64).putInt(2).putInt(0)
                .putLong(0).putLong(0x1000).putLong(0x7000_0000_0000L).putLong(0)
                .putLong(gpa).putLong(size).putLong(uaddr).putLong(offset).array());
    }

    @Test
    void regionsThatCannotBeMappedAreRefusedByField() {
        refused("regions[1].memory_size", 0, () -> MemoryTableDescription.decode(R, tableWithSecond(0x10000, 0, 0x10000, 0)));
        refused("regions[1].guest_phys_addr", -4096,
                () -> MemoryTableDescription.decode(R, tableWithSecond(-4096, 0x2000, 0x10000, 0)));
        refused("regions[1].userspace_addr", -4096,
                () -> MemoryTableDescription.decode(R, tableWithSecond(0x10000, 0x2000, -4096, 0)));
        refused("regions[1].mmap_offset", Long.MAX_VALUE - 10,
                () -> MemoryTableDescription.decode(R, tableWithSecond(0x10000, 0x2000, 0x10000, Long.MAX_VALUE - 10)));
        refused("regions[1].mmap_offset", -1L,
                () -> MemoryTableDescription.decode(R, tableWithSecond(0x10000, 0x2000, 0x10000, -1)));
    }

    @Test
    void aSingleRegionIsCheckedLikeATablesRegions() {
        byte[] b = buf(40).putLong(0).putLong(0x1000).putLong(0).putLong(0x2000).putLong(0).array();
        refused("region.memory_size", 0, () -> SingleMemoryRegion.decode(R, seg(b)));
    }

    @Test
    void configSizeBeyond256OrNotMatchingThePayloadIsRefused() {
        refused("size", 257, () -> ConfigPayload.decode(R, seg(buf(12 + 257).putInt(0).putInt(257).array())));
        refused("size", 8, () -> ConfigPayload.decode(R, seg(buf(12 + 4).putInt(0).putInt(8).array())));
        refused("size", 0, () -> ConfigPayload.decode(R, seg(buf(12 + 4).putInt(0).putInt(0).array())));
        refused("size", 11, () -> ConfigPayload.decode(R, seg(new byte[11])));
    }

    @Test
    void configFlagsOtherThanWritableOrMigrationAreRefused() {
        refused("flags", 2, () -> ConfigPayload.decode(R, seg(buf(12 + 1).putInt(0).putInt(1).putInt(2).array())));
    }
}
