package io.virtio4j.os;

import io.virtio4j.os.netlab.Commands;
import io.virtio4j.testkit.NoFdLeaks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Real tap devices: each test creates its own (unique names), and a namespace where frames must flow, and
 * removes both, also when it fails. Needs CAP_NET_ADMIN (root) and /dev/net/tun; skipped otherwise.
 */
@ExtendWith(NoFdLeaks.class)
class TunTapTest {
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    @BeforeAll
    static void needsTapPermission() {
        assumeTrue(Files.isReadable(Path.of("/dev/net/tun")), "no /dev/net/tun");
        String probe = Commands.uniqueName('p');
        try (TunTap t = TunTap.open(probe)) {
            assumeTrue(t.name().equals(probe));
        } catch (LinuxException e) {
            assumeTrue(false, "cannot create a tap here: " + e.getMessage());
        }
    }

    private static boolean exists(String ifname) {
        return Files.exists(Path.of("/sys/class/net", ifname));
    }

    @Test
    void openCreatesATapWithTwelveByteVnetHeadersAndNonBlockingReads() {
        String name = Commands.uniqueName('t');
        try (TunTap tap = TunTap.open(name); Arena arena = Arena.ofConfined()) {
            assertEquals(name, tap.name());
            assertTrue(exists(name), "/sys/class/net/" + name);
            assertEquals(TunTap.VNET_HDR_LEN, tap.vnetHeaderSize());
            int flags = tap.flags();
            assertEquals(TunTap.IFF_TAP | TunTap.IFF_NO_PI | TunTap.IFF_VNET_HDR,
                    flags & (TunTap.IFF_TAP | TunTap.IFF_NO_PI | TunTap.IFF_VNET_HDR | TunTap.IFF_MULTI_QUEUE));
            assertFalse(tap.isMultiQueue());
            MemorySegment buf = arena.allocate(2048);
            assertEquals(-Errno.EAGAIN, tap.read(buf, buf.byteSize()), "nothing transmitted yet: EAGAIN, not a block");
            // Down: the kernel refuses frames with EIO, reported as a value, not thrown.
            MemorySegment frame = arena.allocate(TunTap.VNET_HDR_LEN + 60);
            assertEquals(-Errno.EIO, tap.write(frame, frame.byteSize()));
        }
        assertFalse(exists(name), "a tap nobody made persistent goes with its descriptor");
    }

    @Test
    void namesTheKernelWouldRefuseAreRefusedBeforeOpening() {
        assertThrows(IllegalArgumentException.class, () -> TunTap.open("a-name-of-16-byt"));
        assertThrows(IllegalArgumentException.class, () -> TunTap.open(""));
        assertThrows(IllegalArgumentException.class, () -> TunTap.open("has space"));
        assertThrows(IllegalArgumentException.class, () -> TunTap.open("a/b"));
    }

    @Test
    void aTemplateNameIsFilledInByTheKernel() {
        String stem = "v4j" + (ProcessHandle.current().pid() % 100_000) + "x";
        try (TunTap tap = TunTap.open(stem + "%d")) {
            assertTrue(tap.name().matches(stem + "\\d+"), tap.name());
            assertTrue(exists(tap.name()));
        }
    }

    @Test
    void aSingleQueueTapIsBusyForASecondOpenAMultiQueueTapAddsQueues() {
        String name = Commands.uniqueName('s');
        try (TunTap tap = TunTap.open(name)) {
            LinuxException e = assertThrows(LinuxException.class, () -> TunTap.open(name));
            assertEquals("EBUSY", e.errnoName());
            assertEquals(name, tap.name());
        }
        String mq = Commands.uniqueName('m');
        try (TunTap q0 = TunTap.open(mq, true); TunTap q1 = TunTap.open(mq, true)) {
            assertTrue(q0.isMultiQueue());
            assertTrue(q1.isMultiQueue());
            assertEquals(TunTap.VNET_HDR_LEN, q1.vnetHeaderSize());
        }
        assertFalse(exists(mq));
    }

    /**
     * The tap moves into a namespace of its own with an address and a neighbour: a datagram sent from there is a frame
     * this side reads (vnet header, then Ethernet and IPv4/UDP), and a frame written here is one the
     * namespace's kernel receives (its rx counter moves).
     */
    @Test
    void framesFlowBothWaysWithTheVnetHeaderInFront() throws Exception {
        String name = Commands.uniqueName('f');
        String ns = Commands.uniqueName('n');
        try (TunTap tap = TunTap.open(name); Arena arena = Arena.ofConfined();
             Epoll epoll = Epoll.create(1)) {
            Commands.run("ip", "netns", "add", ns);
            try {
                Commands.run("ip", "link", "set", name, "netns", ns);
                Commands.run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
                Commands.run("ip", "-n", ns, "link", "set", name, "address", "02:00:00:00:0a:01");
                Commands.run("ip", "-n", ns, "addr", "add", "169.254.201.1/24", "dev", name);
                Commands.run("ip", "-n", ns, "link", "set", name, "up");
                Commands.run("ip", "-n", ns, "neigh", "add", "169.254.201.2", "lladdr", "02:00:00:00:0a:02",
                        "dev", name, "nud", "permanent");
                epoll.add(tap.fileDescriptor(), Epoll.EPOLLIN, 1);
                // A few datagrams from the namespace to the neighbour: the kernel transmits them on the tap.
                Thread sender = Thread.ofPlatform().start(() -> Commands.quietly(
                        UdpSendChild.inNamespace(ns, "169.254.201.2", "9", "20")));
                MemorySegment buf = arena.allocate(4096);
                long n = -Errno.EAGAIN;
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (n < 0 && System.nanoTime() < deadline) {
                    epoll.await(1000);
                    n = tap.read(buf, buf.byteSize());
                    if (n > 0 && buf.get(BE_SHORT, TunTap.VNET_HDR_LEN + 12) != 0x0800) {
                        n = -Errno.EAGAIN; // not the IPv4 frame we wait for
                    }
                }
                sender.join();
                assertTrue(n > 0, "no IPv4 frame read from the tap: " + n);
                int eth = TunTap.VNET_HDR_LEN;
                assertEquals(0x02, buf.get(ValueLayout.JAVA_BYTE, eth + 5), "destination MAC: the neighbour");
                assertEquals(17, buf.get(ValueLayout.JAVA_BYTE, eth + 14 + 9), "IP protocol UDP");
                assertEquals(0, buf.get(ValueLayout.JAVA_BYTE, 1), "gso_type NONE: no offloads were enabled");

                long before = Long.parseLong(Commands.run("ip", "netns", "exec", ns, "cat",
                        "/sys/class/net/" + name + "/statistics/rx_packets").trim());
                // The same frame back (any well-formed Ethernet frame will do): the namespace receives it.
                assertEquals(n, tap.write(buf, n));
                long after = Long.parseLong(Commands.run("ip", "netns", "exec", ns, "cat",
                        "/sys/class/net/" + name + "/statistics/rx_packets").trim());
                assertEquals(before + 1, after, "rx_packets of " + name + " in " + ns);
            } finally {
                Commands.quietly("ip", "netns", "del", ns);
            }
        }
        assertFalse(exists(name));
    }
}
