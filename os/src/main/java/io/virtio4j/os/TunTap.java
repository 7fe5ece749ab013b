package io.virtio4j.os;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A Linux tap device opened through /dev/net/tun: every read returns one Ethernet frame the kernel transmitted
 * on the interface, every write hands the kernel one frame as if received on it. Each frame is preceded by a
 * 12-byte virtio_net_hdr ({@link #VNET_HDR_LEN}: IFF_VNET_HDR with TUNSETVNETHDRSZ 12, the virtio 1.x layout
 * with num_buffers), so a virtio-net back-end can pass guest headers through unchanged.
 *
 * <p>The descriptor is non-blocking and close-on-exec. Opening a name that does not exist creates the interface
 * (down, owned by this descriptor: it disappears when the last descriptor closes, unless made persistent by
 * someone else, e.g. {@code ip tuntap add}); opening an existing tap attaches to it. With {@code multiQueue}
 * each open of the same name adds one queue, and the kernel spreads transmitted frames over the queues by flow.
 *
 * <p>A tap that is down refuses writes with EIO; a tap whose interface was deleted reads and writes EBADFD.
 * Reads and writes are {@link FramePort} operations: errno comes back negated, nothing is allocated.
 */
public final class TunTap implements FramePort {
    /** Bytes of the virtio_net_hdr before every frame: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset, num_buffers. */
    public static final int VNET_HDR_LEN = 12;
    /** Longest interface name (IFNAMSIZ 16 with its terminating NUL). */
    public static final int MAX_NAME_BYTES = 15;

    static final int IFF_TAP = 0x0002;
    static final int IFF_MULTI_QUEUE = 0x0100;
    static final int IFF_NO_PI = 0x1000;
    static final int IFF_VNET_HDR = 0x4000;

    // _IOW('T', nr, int) = 0x40045400 | nr, _IOR('T', nr, ...) = 0x80045400 | nr (linux/if_tun.h)
    private static final long TUNSETIFF = 0x400454caL;
    private static final long TUNGETIFF = 0x800454d2L;
    private static final long TUNGETVNETHDRSZ = 0x800454d7L;
    private static final long TUNSETVNETHDRSZ = 0x400454d8L;

    /** struct ifreq: char ifr_name[16], then a union whose first member used here is short ifr_flags; 40 bytes. */
    private static final int IFREQ_BYTES = 40;
    private static final int IFNAMSIZ = 16;
    private static final int IFR_FLAGS = 16;

    private static final int O_RDWR = 2;
    private static final int O_NONBLOCK = 0x800;
    private static final int O_CLOEXEC = 0x80000;

    /** open(const char *path, int flags, ...): the mode is variadic. */
    private static final MethodHandle OPEN = Native.downcallErrno("open", Linker.Option.firstVariadicArg(2),
            JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);

    private final FileDescriptor fd;
    private final String name;
    private final FrameIo io;

    private TunTap(FileDescriptor fd, String name) {
        this.fd = fd;
        this.name = name;
        this.io = new FrameIo(fd, "tap " + name);
    }

    /** Opens (creating when absent) the single-queue tap {@code name}. */
    public static TunTap open(String name) {
        return open(name, false);
    }

    /**
     * Opens the tap {@code name}, creating it when absent, with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR (and
     * IFF_MULTI_QUEUE when asked), a 12-byte vnet header, non-blocking.
     *
     * @param name an interface name of at most 15 bytes; a {@code %d} in it lets the kernel pick a number
     * @throws IllegalArgumentException for a name the kernel would refuse
     * @throws LinuxException e.g. EPERM without CAP_NET_ADMIN, EBUSY when a single-queue tap of that name is
     *         already attached, EINVAL when an existing interface of that name is not a tap or differs in
     *         multi-queue mode
     */
    public static TunTap open(String name, boolean multiQueue) {
        byte[] nameBytes = checkName(name);
        FileDescriptor fd;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom("/dev/net/tun");
            fd = FileDescriptor.adopt((int) Native.call("open(/dev/net/tun)",
                    st -> (int) OPEN.invokeExact(st, path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0)));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ifr = arena.allocate(IFREQ_BYTES, 8);
            MemorySegment.copy(nameBytes, 0, ifr, JAVA_BYTE, 0, nameBytes.length);
            ifr.set(JAVA_SHORT, IFR_FLAGS, (short) (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (multiQueue ? IFF_MULTI_QUEUE : 0)));
            ioctl(fd, "TUNSETIFF(" + name + ")", TUNSETIFF, ifr);
            // The kernel writes back the name it used (a %d template becomes a number).
            String actual = ifr.getString(0, StandardCharsets.US_ASCII);
            MemorySegment size = arena.allocate(JAVA_INT);
            size.set(JAVA_INT, 0, VNET_HDR_LEN);
            // Without this the kernel uses the 10-byte legacy header; virtio 1.x always has num_buffers.
            ioctl(fd, "TUNSETVNETHDRSZ(" + actual + ")", TUNSETVNETHDRSZ, size);
            return new TunTap(fd, actual);
        } catch (RuntimeException e) {
            fd.close();
            throw e;
        }
    }

    private static byte[] checkName(String name) {
        byte[] b = name.getBytes(StandardCharsets.US_ASCII);
        if (b.length == 0 || b.length > MAX_NAME_BYTES) {
            throw new IllegalArgumentException("an interface name has 1 to " + MAX_NAME_BYTES + " bytes: '" + name + "'");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c <= ' ' || c >= 127 || c == '/' || c == ':') {
                throw new IllegalArgumentException("interface name '" + name + "' has a character the kernel refuses at " + i);
            }
        }
        if (name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("interface name '" + name + "' is refused by the kernel");
        }
        return b;
    }

    private static void ioctl(FileDescriptor fd, String what, long request, MemorySegment arg) {
        int n = fd.fd();
        Native.call("ioctl " + what, st -> (int) Native.IOCTL.invokeExact(st, n, request, arg));
    }

    /** The interface name, as the kernel chose it. */
    @Override
    public String name() {
        return name;
    }

    @Override
    public FileDescriptor fileDescriptor() {
        return fd;
    }

    /** The vnet header size the kernel uses on this descriptor (TUNGETVNETHDRSZ): 12 after {@link #open}. */
    public int vnetHeaderSize() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            ioctl(fd, "TUNGETVNETHDRSZ(" + name + ")", TUNGETVNETHDRSZ, v);
            return v.get(JAVA_INT, 0);
        }
    }

    /** The IFF_* flags of the attached interface (TUNGETIFF). */
    public int flags() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ifr = arena.allocate(IFREQ_BYTES, 8);
            ioctl(fd, "TUNGETIFF(" + name + ")", TUNGETIFF, ifr);
            return Short.toUnsignedInt(ifr.get(JAVA_SHORT, IFR_FLAGS));
        }
    }

    public boolean isMultiQueue() {
        return (flags() & IFF_MULTI_QUEUE) != 0;
    }

    /**
     * Reads one frame the kernel transmitted: {@link #VNET_HDR_LEN} header bytes, then the Ethernet frame.
     * Bytes 10-11 (num_buffers) are not written by the kernel.
     */
    @Override
    public long read(MemorySegment buffer, long capacity) {
        return io.read(buffer, capacity);
    }

    /** Writes one frame, header first, for the kernel to receive on the interface. */
    @Override
    public long write(MemorySegment frame, long length) {
        return io.write(frame, length);
    }

    /** Closes the descriptor; a tap this descriptor created and nobody made persistent disappears. */
    @Override
    public void close() {
        fd.close();
    }

    @Override
    public String toString() {
        return "tap " + name + " (" + fd + ")";
    }
}
