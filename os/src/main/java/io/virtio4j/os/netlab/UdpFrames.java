package io.virtio4j.os.netlab;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Ethernet/IPv4/UDP frames and the checksummed payload both ends of a test write and check.
 *
 * <p>Payload: magic "v4j!" (4 bytes), sequence number (4), length (2), bytes derived from the sequence number,
 * then the CRC32 of everything before it (4). Anything damaged, truncated, or mixed up fails {@link #check}.
 * Multi-byte fields are big-endian (network order).
 */
public final class UdpFrames {
    public static final int MAGIC = 0x76346a21;
    public static final int MIN_PAYLOAD = 14;
    public static final int ETH = 14;
    public static final int IP = 20;
    public static final int UDP = 8;
    /** Ethernet + IPv4 + UDP headers. */
    public static final int HEADERS = ETH + IP + UDP;
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private UdpFrames() {
    }

    /** Writes a checksummed payload of {@code len} bytes for {@code seq} at {@code off}. */
    public static void fillPayload(MemorySegment s, long off, int len, int seq) {
        if (len < MIN_PAYLOAD) {
            throw new IllegalArgumentException("payload of at least " + MIN_PAYLOAD + " bytes");
        }
        s.set(BE_INT, off, MAGIC);
        s.set(BE_INT, off + 4, seq);
        s.set(BE_SHORT, off + 8, (short) len);
        int x = seq * 0x9E3779B9 + 1;
        for (int i = 10; i < len - 4; i++) {
            x ^= x << 13;
            x ^= x >>> 17;
            x ^= x << 5;
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) x);
        }
        s.set(BE_INT, off + len - 4, crc(s, off, len - 4));
    }

    /** The sequence number of an intact payload of {@code len} bytes at {@code off}, or -1 when it is not intact. */
    public static long check(MemorySegment s, long off, int len) {
        if (len < MIN_PAYLOAD || s.get(BE_INT, off) != MAGIC || Short.toUnsignedInt(s.get(BE_SHORT, off + 8)) != len) {
            return -1;
        }
        if (s.get(BE_INT, off + len - 4) != crc(s, off, len - 4)) {
            return -1;
        }
        return Integer.toUnsignedLong(s.get(BE_INT, off + 4));
    }

    /** Whether the payload at {@code off} starts with the magic (a cheap filter; {@link #check} verifies). */
    public static boolean hasMagic(MemorySegment s, long off, long available) {
        return available >= MIN_PAYLOAD && s.get(BE_INT, off) == MAGIC;
    }

    private static int crc(MemorySegment s, long off, int len) {
        CRC32 c = new CRC32();
        c.update(s.asSlice(off, len).asByteBuffer());
        return (int) c.getValue();
    }

    /**
     * Writes an Ethernet + IPv4 + UDP frame carrying a checksummed payload of {@code payloadLen} bytes at
     * {@code off}; returns the frame's length. The IPv4 header checksum is computed, the UDP checksum left 0
     * (none, which IPv4 allows).
     */
    public static int udpFrame(MemorySegment s, long off, byte[] dstMac, byte[] srcMac, byte[] srcIp, byte[] dstIp,
                               int srcPort, int dstPort, int payloadLen, int seq) {
        MemorySegment.copy(dstMac, 0, s, ValueLayout.JAVA_BYTE, off, 6);
        MemorySegment.copy(srcMac, 0, s, ValueLayout.JAVA_BYTE, off + 6, 6);
        s.set(BE_SHORT, off + 12, (short) 0x0800);
        long ip = off + ETH;
        int total = IP + UDP + payloadLen;
        s.set(ValueLayout.JAVA_BYTE, ip, (byte) 0x45);
        s.set(ValueLayout.JAVA_BYTE, ip + 1, (byte) 0);
        s.set(BE_SHORT, ip + 2, (short) total);
        s.set(BE_SHORT, ip + 4, (short) seq);
        s.set(BE_SHORT, ip + 6, (short) 0x4000); // don't fragment
        s.set(ValueLayout.JAVA_BYTE, ip + 8, (byte) 64);
        s.set(ValueLayout.JAVA_BYTE, ip + 9, (byte) 17);
        s.set(BE_SHORT, ip + 10, (short) 0);
        MemorySegment.copy(srcIp, 0, s, ValueLayout.JAVA_BYTE, ip + 12, 4);
        MemorySegment.copy(dstIp, 0, s, ValueLayout.JAVA_BYTE, ip + 16, 4);
        s.set(BE_SHORT, ip + 10, ipChecksum(s, ip));
        long udp = ip + IP;
        s.set(BE_SHORT, udp, (short) srcPort);
        s.set(BE_SHORT, udp + 2, (short) dstPort);
        s.set(BE_SHORT, udp + 4, (short) (UDP + payloadLen));
        s.set(BE_SHORT, udp + 6, (short) 0);
        fillPayload(s, udp + UDP, payloadLen, seq);
        return HEADERS + payloadLen;
    }

    private static short ipChecksum(MemorySegment s, long ip) {
        int sum = 0;
        for (int i = 0; i < IP; i += 2) {
            sum += Short.toUnsignedInt(s.get(BE_SHORT, ip + i));
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return (short) ~sum;
    }

    /**
     * The UDP payload length of an Ethernet/IPv4/UDP frame of {@code len} bytes at {@code off} sent to UDP port
     * {@code dstPort}, or -1 for any other frame (ARP, IPv6, another port, an IPv4 header with options).
     */
    public static int udpPayloadLength(MemorySegment s, long off, long len, int dstPort) {
        if (len < HEADERS || s.get(BE_SHORT, off + 12) != 0x0800 || s.get(ValueLayout.JAVA_BYTE, off + ETH) != 0x45
                || s.get(ValueLayout.JAVA_BYTE, off + ETH + 9) != 17
                || Short.toUnsignedInt(s.get(BE_SHORT, off + ETH + IP + 2)) != dstPort) {
            return -1;
        }
        int udpLen = Short.toUnsignedInt(s.get(BE_SHORT, off + ETH + IP + 4));
        if (udpLen < UDP || HEADERS - UDP + udpLen > len) {
            return -1;
        }
        return udpLen - UDP;
    }

    /** Parses "a.b.c.d". */
    public static byte[] ipv4(String dotted) {
        String[] p = dotted.split("\\.");
        if (p.length != 4) {
            throw new IllegalArgumentException("not an IPv4 address: " + dotted);
        }
        byte[] b = new byte[4];
        for (int i = 0; i < 4; i++) {
            b[i] = (byte) Integer.parseInt(p[i]);
        }
        return b;
    }

    /** Parses "aa:bb:cc:dd:ee:ff". */
    public static byte[] mac(String colons) {
        return java.util.HexFormat.ofDelimiter(":").parseHex(colons);
    }
}
